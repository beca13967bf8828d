import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFakeLinkServer } from '../src/test-support/fake-link-server.ts'
import { startPlainServer } from '../src/test-support/plain-server.ts'

const BIN = new URL('../bin/meshwork-node.mjs', import.meta.url).pathname

function runCli(args: string[], home: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, MESHWORK_NODE_HOME: home } },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('meshwork-node CLI', () => {
  let home = ''
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'mw-cli-'))
  })
  afterAll(() => rm(home, { recursive: true, force: true }))

  it('login: prints the approve URL on its own line and stores credentials with mode 0600', async () => {
    const server = await startFakeLinkServer('approve', 1)
    const res = await runCli(
      ['login', '--server', server.url, '--device', 'laptop', '--no-open'],
      home,
    )
    await server.close()
    expect(res.code).toBe(0)
    expect(res.stdout.split('\n')).toContain(
      `${server.url}/auth/approve-node?token=st_123&device=laptop`,
    )
    const file = join(home, 'credentials.json')
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({
      server: server.url,
      node_id: 'node_abc',
      credential: 'cred_xyz',
    })
  })

  it('login: a denial ends with a clear message and exit code 1', async () => {
    const server = await startFakeLinkServer('deny', 0)
    const res = await runCli(['login', '--server', server.url, '--no-open'], join(home, 'other'))
    await server.close()
    expect(res.code).toBe(1)
    expect(res.stderr).toContain('Authorization denied: User denied authorization')
  })

  it('start without credentials and unknown flags both fail', async () => {
    const missing = await runCli(['start'], join(home, 'empty'))
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/meshwork-node login --server URL/)
    const strict = await runCli(['start', '--bogus'], home)
    expect(strict.code).toBe(1)
    expect(strict.stderr).toMatch(/Unknown argument/)
  })

  it('login on a linked machine says so and links again only with --force', async () => {
    const linked = join(home, 'linked')
    const first = await startFakeLinkServer('approve', 1)
    expect((await runCli(['login', '--server', first.url, '--no-open'], linked)).code).toBe(0)
    const flows = first.startBodies.length
    const again = await runCli(['login', '--server', first.url, '--no-open'], linked)
    expect(again.code).toBe(0)
    expect(again.stdout).toContain(
      `This machine is already linked to ${first.url} as node node_abc`,
    )
    expect(again.stdout).toContain('Run `meshwork-node start` to connect it.')
    expect(again.stdout).toContain(`meshwork-node login --server ${first.url} --force`)
    expect(first.startBodies.length).toBe(flows) // no second node was started
    const elsewhere = await runCli(['login', '--server', 'http://127.0.0.1:9', '--no-open'], linked)
    expect(elsewhere.code).toBe(1)
    expect(elsewhere.stderr).toContain('It was not linked to http://127.0.0.1:9.')
    const forced = await runCli(['login', '--server', first.url, '--no-open', '--force'], linked)
    expect(forced.code).toBe(0)
    expect(first.startBodies.length).toBeGreaterThan(flows)
    expect(forced.stdout).toMatch(/Node linked/)
    await first.close()
  })

  it('login names the URL and the cause when the coordinator cannot be used', async () => {
    const closed = await startFakeLinkServer('approve', 1)
    const url = closed.url
    await closed.close()
    const refused = await runCli(['login', '--server', url, '--no-open'], join(home, 'x1'))
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`Login failed: Could not reach ${url}: connection refused`)
    const web = await startPlainServer()
    const wrong = await runCli(['login', '--server', web.url, '--no-open'], join(home, 'x2'))
    await web.close()
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain(
      `Login failed: ${web.url} is not a Meshwork server (it answered HTTP 404 to /api/auth/start-flow)`,
    )
  })
})
