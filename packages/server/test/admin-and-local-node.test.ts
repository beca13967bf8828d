import { execFile } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nodeAuthorizationHeader } from '@meshwork/protocol'
import { addModel, adjustCredits, editModel } from '../src/cli/admin-commands.ts'
import { holdCredits } from '../src/core/ledger/reservation.ts'
import { withUnitOfWork } from '../src/core/records/unit-of-work.ts'
import {
  ensureLocalNode,
  HOUSE_EMAIL,
  startLocalNode,
  type LocalNode,
} from '../src/local-node/start-local-node.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { linkNode, postJson, waitUntil } from './support/network.ts'
import { modelMirror as mirror } from '@meshwork/test-kit'

const serverRoot = fileURLToPath(new URL('..', import.meta.url))

describe.each(dialects)('[%s] admin commands, model downloads and the local node', (dialect) => {
  let server: TestServer
  let local: LocalNode | null = null
  const home = mkdtempSync(join(tmpdir(), 'meshwork-local-'))

  beforeAll(async () => {
    server = await startTestServer(dialect, { modelMirror: mirror })
  })
  afterAll(async () => {
    await local?.agent.stop()
    await server?.stop()
    rmSync(home, { recursive: true, force: true })
  })

  it('grants and debits credits by email, never below zero', async () => {
    const pb = await signUp(server, 'admined')
    const email = pb.authStore.record!.email as string
    expect(
      (await adjustCredits(server.core.database.db, { email, amount: 250, direction: 'credit' }))
        .balanceAfter,
    ).toBe(1250)
    expect(
      (
        await adjustCredits(server.core.database.db, {
          email,
          amount: 50,
          direction: 'debit',
          description: 'refund',
        })
      ).balanceAfter,
    ).toBe(1200)
    await expect(
      adjustCredits(server.core.database.db, { email, amount: 5000, direction: 'debit' }),
    ).rejects.toThrow(/Insufficient/)
    await expect(
      adjustCredits(server.core.database.db, {
        email: 'nobody@example.com',
        amount: 1,
        direction: 'credit',
      }),
    ).rejects.toThrow(/No user/)
    // Rows written within one millisecond share `created`, so the order among them is not pinned.
    const txs = await pb.collection('user_credit_txs').getFullList()
    expect(txs.map((t) => [t.type, t.amount]).sort(byTypeThenAmount)).toEqual([
      ['credit_admin', 250],
      ['credit_admin', 1000],
      ['debit_admin', 50],
    ])
  })

  it('never debits credits an answer in progress holds', async () => {
    const pb = await signUp(server, 'heldadmin')
    const user = pb.authStore.record!
    // An answer in progress holds 900 of the 1,000 credits (units are thousandths).
    await withUnitOfWork(server.core, (uow) =>
      holdCredits(uow, {
        user: user.id,
        estimatedInput: 100,
        maxOutput: 800,
        minOutput: 1,
        multiplierUnits: 1000,
      }),
    )
    await expect(
      adjustCredits(server.core.database.db, {
        email: user.email,
        amount: 101,
        direction: 'debit',
      }),
    ).rejects.toThrow(/Insufficient/)
    expect(
      (
        await adjustCredits(server.core.database.db, {
          email: user.email,
          amount: 100,
          direction: 'debit',
        })
      ).balanceAfter,
    ).toBe(900)
    const balance = await pb.collection('user_balances').getFirstListItem('')
    expect(balance).toMatchObject({ balance: 900, held: 900 })
  })

  it('adds and edits catalogue models', async () => {
    const db = server.core.database.db
    const id = await addModel(db, {
      name: 'tiny-x',
      display_name: 'Tiny X',
      source_url: 'https://example.com/m/tiny-x.Q4.gguf',
      sha256: 'A'.repeat(64),
      file_size_bytes: 10,
      credit_multiplier: 3,
      sort_order: 9,
    })
    await expect(addModel(db, { name: 'tiny-x' })).rejects.toThrow(/exists/)
    await expect(addModel(db, { name: 'bad', sha256: 'xyz' })).rejects.toThrow(/sha256/)
    // Nodes keep models by file name: a second model may not take the first one's file.
    await expect(
      addModel(db, { name: 'tiny-y', source_url: 'https://example.com/other/TINY-X.q4.gguf' }),
    ).rejects.toThrow(/file name TINY-X.q4.gguf is model tiny-x's already/)
    const other = await addModel(db, { name: 'tiny-z', file_name: 'tiny-z.gguf' })
    await expect(editModel(db, other, { file_name: 'tiny-x.Q4.gguf' })).rejects.toThrow(/already/)
    await editModel(db, 'tiny-x', { file_name: 'tiny-x.Q4.gguf' }) // its own name stays allowed
    await editModel(db, 'tiny-x', { credit_multiplier: 4, is_active: false })
    const row = await db
      .selectFrom('models')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    expect(row).toMatchObject({
      file_name: 'tiny-x.Q4.gguf',
      sha256: 'a'.repeat(64),
      credit_multiplier: 4000, // thousandths: the API shows 4
      is_active: 0,
      display_name: 'Tiny X',
      sort_order: 9,
    })
  })

  it('serves model files to nodes only, from the mirror, with Range', async () => {
    const owner = await signUp(server, 'downloader')
    const { nodeId, credential } = await linkNode(server, owner)
    const url = new URL(`/api/models/${await modelId(server)}/download`, server.url)
    expect((await fetch(url)).status).toBe(401)
    expect(
      (await fetch(url, { headers: { authorization: nodeAuthorizationHeader(nodeId, 'wrong') } }))
        .status,
    ).toBe(401)
    const authorization = nodeAuthorizationHeader(nodeId, credential)
    const whole = await fetch(url, { headers: { authorization } })
    expect(whole.status).toBe(200)
    const file = readFileSync(join(mirror, 'stories260K.gguf'))
    expect(Buffer.from(await whole.arrayBuffer()).equals(file)).toBe(true)
    const part = await fetch(url, { headers: { authorization, range: 'bytes=100-' } })
    expect(part.status).toBe(206)
    expect(part.headers.get('content-range')).toBe(`bytes 100-${file.length - 1}/${file.length}`)
    expect(Buffer.from(await part.arrayBuffer()).equals(file.subarray(100))).toBe(true)
    expect(
      (await fetch(url, { headers: { authorization, range: `bytes=${file.length}-` } })).status,
    ).toBe(416)
  })

  it('streams the catalogue source URL through when the mirror lacks the file', async () => {
    const bytes = Buffer.from('GGUF fake model bytes 0123456789')
    const source = createServer((req, res) => {
      const range = /bytes=(\d+)-/.exec(req.headers.range ?? '')
      if (range) {
        const start = Number(range[1])
        res.writeHead(206, {
          'content-range': `bytes ${start}-${bytes.length - 1}/${bytes.length}`,
        })
        return res.end(bytes.subarray(start))
      }
      res.writeHead(200, { 'content-length': bytes.length })
      res.end(bytes)
    })
    await new Promise<void>((r) => source.listen(0, '127.0.0.1', r))
    try {
      const port = (source.address() as AddressInfo).port
      const id = await addModel(server.core.database.db, {
        name: `remote-${Date.now()}`,
        source_url: `http://127.0.0.1:${port}/remote.gguf`,
      })
      const owner = await signUp(server, 'remote')
      const { nodeId, credential } = await linkNode(server, owner)
      const url = new URL(`/api/models/${id}/download`, server.url)
      const authorization = nodeAuthorizationHeader(nodeId, credential)
      const whole = await fetch(url, { headers: { authorization } })
      expect(whole.status).toBe(200)
      expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true)
      const part = await fetch(url, { headers: { authorization, range: 'bytes=5-' } })
      expect(part.status).toBe(206)
      expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(5))).toBe(true)
    } finally {
      source.close()
    }
  })

  it('runs the local node of the house account, idempotently, and answers a first chat', async () => {
    const first = await ensureLocalNode(server.core)
    const again = await ensureLocalNode(server.core)
    expect(again).toEqual(first)
    const house = await server.core.database.db
      .selectFrom('users')
      .selectAll()
      .where('email', '=', HOUSE_EMAIL)
      .execute()
    expect(house).toHaveLength(1)
    local = await startLocalNode(server.core, { server: server.url, home, threads: 1 })
    expect(local.nodeId).toBe(first.nodeId)
    const pb = await signUp(server, 'newcomer')
    const stories = await modelId(server)
    await waitUntil(
      async () => (await pb.collection('available_models').getOne(stories)).node_count >= 1,
      30_000,
      'local node serving',
    )
    const conv = await pb
      .collection('conversations')
      .create({ title: 'New Chat', user: pb.authStore.record!.id })
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conv.id, model_id: stories, prompt: 'Once upon a time' },
      pb.authStore.token,
    )
    const done = await waitUntil(
      async () => {
        const r = await pb.collection('requests').getOne(sent.body.request_id as string)
        return r.status === 'completed' && r
      },
      20_000,
      'answer',
    )
    expect(done.node).toBe(local.nodeId)
  })
})

describe('admin command line', () => {
  it('adds a model and lists it, on the database the environment names', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshwork-admin-'))
    const run = (...args: string[]) =>
      promisify(execFile)('npx', ['tsx', 'src/cli/admin.ts', ...args], {
        cwd: serverRoot,
        env: { ...process.env, MESHWORK_DATA_DIR: dataDir },
      })
    try {
      const added = await run(
        'model-add',
        '--name',
        'cli-model',
        '--source-url',
        'https://example.com/cli.gguf',
        '--multiplier',
        '2',
      )
      expect(added.stdout).toMatch(/Added model [a-z0-9]{15}/)
      const listed = await run('models')
      expect(listed.stdout).toMatch(/cli-model\s+x2\s+active\s+cli\.gguf/)
      await expect(run('credit', 'nobody@example.com', '5')).rejects.toMatchObject({
        stderr: expect.stringMatching(/No user/),
      })
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)

  it('prints its usage and exits 0 for --help, through npm from the root as the README says', async () => {
    const repoRoot = fileURLToPath(new URL('../../..', import.meta.url))
    const npm = (...args: string[]) =>
      promisify(execFile)('npm', ['run', '--silent', ...args], { cwd: repoRoot })
    const viaWorkspace = await npm('admin', '-w', '@meshwork/server', '--', '--help')
    expect(viaWorkspace.stdout).toMatch(/^Usage: npm run admin/)
    expect(viaWorkspace.stdout).toMatch(/model-add/)
    const viaRoot = await npm('admin', '--', '--help')
    expect(viaRoot.stdout).toBe(viaWorkspace.stdout)
    // A wrong option is an error that names it, not a stack trace.
    await expect(npm('admin', '--', 'models', '--bogus')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/Unknown option '--bogus'[\s\S]*Usage:/),
    })
  }, 60_000)
})

function byTypeThenAmount(a: unknown[], b: unknown[]): number {
  return String(a[0]).localeCompare(String(b[0])) || Number(a[1]) - Number(b[1])
}
