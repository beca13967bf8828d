/**
 * The ledger audit command (`npm run admin -w @meshwork/server -- audit`) on a live database: it
 * passes after real activity (sign-ups, a paid chat, admin movements, a deleted account) and
 * fails, naming what is wrong, on a deliberately broken one. SQLite and PostgreSQL.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { requireCollection } from '../src/core/collections/registry.ts'
import { server as superuser } from '../src/core/records/caller.ts'
import { newRecordId } from '../src/tools/ids.ts'
import { nowDate } from '../src/tools/dates.ts'
import { modelId } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { adjustBalance } from './support/ledger.ts'
import { postJson, servingNode, waitUntil } from './support/network.ts'

const serverRoot = fileURLToPath(new URL('..', import.meta.url))

/** Runs the real command line on the server's database; answers its exit code and output. */
async function audit(server: TestServer): Promise<{ code: number; out: string }> {
  const config = server.core.config
  const env: NodeJS.ProcessEnv = { ...process.env, MESHWORK_DATA_DIR: config.dataDir }
  if (config.databaseUrl) {
    env.DATABASE_URL = config.databaseUrl
    env.MESHWORK_DATABASE_SCHEMA = config.databaseSchema
  }
  try {
    const { stdout } = await promisify(execFile)('npx', ['tsx', 'src/cli/admin.ts', 'audit'], {
      cwd: serverRoot,
      env,
    })
    return { code: 0, out: stdout }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, out: e.stdout + e.stderr }
  }
}

describe.each(dialects)('[%s] ledger audit command', (dialect) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(dialect)
  })
  afterAll(() => server.stop())

  it('passes on a live database after real activity, and says what it checked', async () => {
    const stories = await modelId(server)
    const { node } = await servingNode(server, stories)
    const pb = await signUp(server, 'audited')
    const conv = await pb
      .collection('conversations')
      .create({ title: 'New Chat', user: pb.authStore.record!.id })
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conv.id, model_id: stories, prompt: 'Hello there' },
      pb.authStore.token,
    )
    const id = sent.body.request_id as string
    await waitUntil(
      async () => (await pb.collection('requests').getOne(id)).status === 'completed',
      10_000,
      'answer',
    )
    await adjustBalance(server, pb.authStore.record!.id, 12.345)
    const leaving = await signUp(server, 'leaving')
    await leaving.collection('users').delete(leaving.authStore.record!.id)
    node.kill()

    const { code, out } = await audit(server)
    expect(out).toMatch(/^ok {3}exact amounts: \d+ balances, \d+ ledger rows/m)
    expect(out).toMatch(
      /^ok {3}balances: \d+ balances equal the sum of their ledger rows .*; 1 closed accounts sum to 0/m,
    )
    expect(out).toMatch(/^ok {3}holds: 0 credits held/m)
    expect(out).toMatch(
      /^ok {3}transfers: inference: [\d.]+ credits over 1 requests, debits = credits/m,
    )
    expect(out).toMatch(/Ledger audit passed\./)
    expect(code).toBe(0)
  }, 60_000)

  it('exits non-zero on a broken database and names every broken invariant', async () => {
    const db = server.core.database.db
    const victim = await signUp(server, 'broken')
    const user = victim.authStore.record!.id
    // Credits out of thin air (no row), a hold without a request, and half of a transfer.
    await db
      .updateTable('user_balances')
      .set({ balance: 1_000_500, held: 7_000 })
      .where('user', '=', user)
      .execute()
    const other = await server.core.records.create(superuser, requireCollection('users'), {
      email: `o${newRecordId()}@example.com`,
      password: 'password123',
      passwordConfirm: 'password123',
    })
    await db
      .insertInto('user_credit_txs')
      .values({
        id: newRecordId(),
        user: other.id,
        type: 'credit_inference_request',
        amount: 2_000,
        balance_after: 1_002_000,
        request: 'forgedrequest01',
        description: 'forged',
        created: nowDate(),
        updated: nowDate(),
      })
      .execute()
    await db
      .updateTable('user_balances')
      .set({ balance: 1_002_000, total_earned: 2_000 })
      .where('user', '=', String(other.id))
      .execute()

    // Pending earnings on a balance that no pending row stands for.
    await db
      .updateTable('user_balances')
      .set({ pending_earnings: 3_000 })
      .where('user', '=', String(other.id))
      .execute()

    const { code, out } = await audit(server)
    expect(code).toBe(1)
    expect(out).toContain(`FAIL balances:`)
    expect(out).toContain(`user ${user}: balance 1000.5 but its ledger rows sum to 1000`)
    expect(out).toContain(`FAIL holds:`)
    expect(out).toContain(`user ${user}: 7 held but its open requests reserve 0`)
    expect(out).toContain('FAIL transfers:')
    expect(out).toContain(
      'inference transfer of request forgedrequest01: credits exceed debits by 2',
    )
    expect(out).toContain('FAIL pending earnings:')
    expect(out).toContain(`user ${other.id}: 3 pending but its pending rows sum to 0`)
    expect(out).toMatch(/^ok {3}exact amounts/m)
    expect(out).toContain('LEDGER AUDIT FAILED.')
  }, 60_000)
})
