/**
 * What `npm start` runs: the coordinator compiled to one JavaScript file (scripts/build-server.mjs),
 * started by plain Node with neither tsx nor node-llama-cpp resolvable (a resolve hook refuses
 * them), the built-in node off. It migrates its database, answers the API and signs a user up:
 * the coordinator needs node-llama-cpp only for the built-in node and its own tokenizers.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitUntil } from '@meshwork/test-kit'

const serverDir = fileURLToPath(new URL('..', import.meta.url))

const REFUSE = `
export async function resolve(specifier, context, next) {
  if (specifier === 'node-llama-cpp' || specifier === 'tsx' || specifier.startsWith('tsx/'))
    throw new Error('refused by the test: ' + specifier)
  return next(specifier, context)
}`

describe('the compiled coordinator', () => {
  // Inside the package, so that its imports of third-party packages find node_modules.
  const outDir = join(serverDir, 'dist', `test-${process.pid}`)
  const temp = mkdtempSync(join(tmpdir(), 'meshwork-compiled-'))
  let child: ChildProcess
  let log = ''
  let url = ''

  beforeAll(async () => {
    const bundle = join(outDir, 'main.js')
    const built = spawnSync(
      process.execPath,
      [join(serverDir, 'scripts/build-server.mjs'), bundle],
      {
        encoding: 'utf8',
      },
    )
    expect(built.stderr).toBe('')
    expect(built.status).toBe(0)
    const hook = join(temp, 'refuse.mjs')
    writeFileSync(
      hook,
      `import { register } from 'node:module'\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(REFUSE)}))\n`,
    )
    child = spawn(process.execPath, ['--import', hook, bundle], {
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        MESHWORK_LOCAL_NODE: '0',
        MESHWORK_DATA_DIR: join(temp, 'data'),
      },
    })
    child.stdout!.on('data', (d) => (log += String(d)))
    child.stderr!.on('data', (d) => (log += String(d)))
    const port = await waitUntil(
      () => /listening on http:\/\/localhost:(\d+)/.exec(log)?.[1],
      30_000,
      'the coordinator listening',
    )
    url = `http://127.0.0.1:${port}`
  })
  afterAll(() => {
    child?.kill('SIGKILL')
    rmSync(outDir, { recursive: true, force: true })
    rmSync(temp, { recursive: true, force: true })
  })

  it('runs on plain Node without tsx or node-llama-cpp, and signs a user up', async () => {
    expect((await fetch(`${url}/api/health`)).status).toBe(200)
    const post = (path: string, body: unknown) =>
      fetch(url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    const account = { email: 'compiled@example.com', password: 'correct horse 1' }
    const created = await post('/api/collections/users/records', {
      ...account,
      passwordConfirm: account.password,
    })
    expect(created.status).toBe(200)
    const auth = await post('/api/collections/users/auth-with-password', {
      identity: account.email,
      password: account.password,
    })
    expect(auth.status).toBe(200)
    const { token } = (await auth.json()) as { token: string }
    const models = await fetch(`${url}/api/collections/models/records`, {
      headers: { authorization: token },
    })
    expect(((await models.json()) as { items: unknown[] }).items.length).toBeGreaterThan(0)
    // Its own tokenizers asked for node-llama-cpp, were refused, and it went on without them.
    expect(log).toContain('refused by the test: node-llama-cpp')
    expect(log).not.toContain('refused by the test: tsx')
    expect(child.exitCode).toBeNull()
  })
})
