/**
 * Issue 9 item 5, as a node owner meets it: the coordinator serves the agent as an npm package
 * at /downloads/meshwork-node.tgz (compiled JavaScript, no TypeScript and no tsx); `npm install -g`
 * of that URL into an empty prefix gives a working `meshwork-node`, which links to the account
 * (`login`, approved by the owner), starts, says where to choose models, and serves a chat with
 * llama.cpp from its installed dependencies.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  api,
  createUser,
  modelId,
  startCoordinator,
  waitUntil,
  type Coordinator,
  type TestUser,
} from '../harness/coordinator.ts'

/** Runs a command, collecting its output as it comes. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env } })
  const out = { text: '' }
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out.text += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out.text += d))
  const exited = new Promise<number | string | null>((r) =>
    child.on('exit', (code, signal) => r(code ?? signal)),
  )
  return { child, out, exited }
}

describe('the node agent installed from the coordinator', () => {
  const dir = mkdtempSync(join(tmpdir(), 'meshwork-agent-pkg-'))
  const prefix = join(dir, 'prefix')
  const home = join(dir, 'node-home')
  let server: Coordinator
  let owner: TestUser
  let agent: ChildProcess | undefined

  beforeAll(async () => {
    server = await startCoordinator()
    owner = await createUser(server, 'owner')
  })
  afterAll(async () => {
    if (agent && agent.exitCode === null && agent.signalCode === null) {
      agent.kill('SIGKILL')
      await new Promise((r) => agent!.once('exit', r))
    }
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('serves a compiled package without TypeScript or tsx', async () => {
    const res = await fetch(`${server.url}/downloads/meshwork-node.tgz`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/gzip')
    const tgz = join(dir, 'agent.tgz')
    writeFileSync(tgz, Buffer.from(await res.arrayBuffer()))
    const list = spawnSync('tar', ['tzf', tgz], { encoding: 'utf8' }).stdout.split('\n')
    expect(list).toContain('package/bin/meshwork-node.js')
    expect(list).toContain('package/dist/cli.js')
    expect(list.filter((f) => /\.tsx?$/.test(f))).toEqual([])
    const manifest = JSON.parse(
      spawnSync('tar', ['xzOf', tgz, 'package/package.json'], { encoding: 'utf8' }).stdout,
    )
    expect(Object.keys(manifest.dependencies).sort()).toEqual([
      'node-llama-cpp',
      'pino',
      'pino-pretty',
      'ws',
      'yargs',
      'zod',
    ])
    expect(manifest.bin).toEqual({ 'meshwork-node': 'bin/meshwork-node.js' })
  })

  it('installs with npm into an empty prefix, links, starts and serves a chat', async () => {
    const installStarted = Date.now()
    // Asynchronously: the coordinator answering npm's download runs in this very process.
    const install = run(
      'npm',
      [
        'install',
        '-g',
        `${server.url}/downloads/meshwork-node.tgz`,
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
      ],
      {},
    )
    expect(await install.exited, install.out.text).toBe(0)
    console.log(
      `agent package: npm install -g took ${((Date.now() - installStarted) / 1000).toFixed(1)} s`,
    )
    const bin = join(prefix, 'bin/meshwork-node')
    expect(existsSync(bin)).toBe(true)
    const installed = join(prefix, 'lib/node_modules/@meshwork/node')
    expect(existsSync(join(installed, 'node_modules/tsx'))).toBe(false)
    expect(existsSync(join(installed, 'node_modules/@meshwork'))).toBe(false)
    expect(readFileSync(join(installed, 'bin/meshwork-node.js'), 'utf8')).not.toMatch(/tsx/)

    // The agent's lines at info (the test config quiets the coordinators to warn).
    const env = { MESHWORK_NODE_HOME: home, MESHWORK_LOG_LEVEL: 'info' }
    const login = run(
      bin,
      ['login', '--server', server.url, '--device', 'Installed Box', '--no-open'],
      env,
    )
    const approveUrl = await waitUntil(
      () => /^(http\S+\/auth\/approve-node\?\S+)$/m.exec(login.out.text)?.[1],
      30_000,
      'the approve URL',
    )
    await api(
      server,
      'POST',
      '/api/auth/complete-flow',
      { state_token: new URL(approveUrl).searchParams.get('token'), user_info: {} },
      owner.token,
    )
    expect(await login.exited, login.out.text).toBe(0)
    expect(login.out.text).toMatch(/Node linked/)
    const node = await server.core.database.db
      .selectFrom('nodes')
      .select(['id', 'device_name'])
      .where('user', '=', owner.id)
      .executeTakeFirstOrThrow()
    expect(node.device_name).toBe('Installed Box')

    const start = run(bin, ['start', '--threads', '1', '--no-gpu'], env)
    agent = start.child
    await waitUntil(() => /connected to /.test(start.out.text), 60_000, 'the agent to connect')
    expect(start.out.text).toContain(
      `Choose what this node serves on My Nodes: ${server.url}/nodes`,
    )
    await waitUntil(
      async () =>
        (
          await server.core.database.db
            .selectFrom('nodes')
            .select('status')
            .where('id', '=', node.id)
            .executeTakeFirst()
        )?.status === 'online',
      30_000,
      'the node online',
    )

    // The owner picks the demo model; the installed agent downloads and serves it.
    const model = await modelId(server)
    const nm = await api<{ id: string }>(
      server,
      'POST',
      '/api/collections/node_models/records',
      { node: node.id, model, requested_download: true, requested_serving: true },
      owner.token,
    )
    await waitUntil(
      async () =>
        (
          await api<{ is_serving: boolean }>(
            server,
            'GET',
            `/api/collections/node_models/records/${nm.id}`,
            undefined,
            owner.token,
          )
        ).is_serving,
      60_000,
      'the model serving',
    )
    expect(start.out.text).toMatch(/stories260K: serving at \d+\.\d tokens\/s/)

    const user = await createUser(server, 'chatter')
    const conv = await api<{ id: string }>(
      server,
      'POST',
      '/api/collections/conversations/records',
      { user: user.id, model, title: 'New Chat' },
      user.token,
    )
    const sent = await api<{ request_id: string }>(
      server,
      'POST',
      '/api/chat/send',
      { conversation_id: conv.id, model_id: model, prompt: 'Once upon a time' },
      user.token,
    )
    const done = await waitUntil(
      async () => {
        const r = await server.core.database.db
          .selectFrom('requests')
          .select(['status', 'node', 'response'])
          .where('id', '=', sent.request_id)
          .executeTakeFirst()
        return r?.status === 'completed' && r
      },
      60_000,
      'the answer',
    )
    expect(done.node).toBe(node.id)
    expect(String(done.response).length).toBeGreaterThan(0)
    expect(start.out.text).toMatch(/job \S+ started \(stories260K\)/)

    start.child.kill('SIGTERM')
    expect(await start.exited, start.out.text.slice(-2000)).toBe(0)
  }, 300_000)
})
