import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writeCredentials } from '../src/auth/credentials-store.ts'
import { startFakeCoordinator, type FakeCoordinator } from '../src/test-support/fake-coordinator.ts'

const BIN = new URL('../bin/meshwork-node.mjs', import.meta.url).pathname
const auth = { nodeId: 'node9', credential: 'good' }

function startCli(home: string) {
  const child = spawn(process.execPath, [BIN, 'start', '--no-gpu', '--threads', '1'], {
    env: { ...process.env, MESHWORK_NODE_HOME: home },
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((r) =>
    child.on('exit', (code) => r({ code, stdout, stderr })),
  )
  return { child, exited }
}

describe('meshwork-node start', () => {
  let coord: FakeCoordinator
  let home = ''
  beforeAll(async () => {
    coord = await startFakeCoordinator({}, auth)
    home = await mkdtemp(join(tmpdir(), 'mw-start-'))
  })
  afterAll(async () => {
    await coord.close()
    await rm(home, { recursive: true, force: true })
  })

  it('connects with the stored credential, says hello and exits 0 on SIGTERM', async () => {
    await writeCredentials(home, { server: coord.url, node_id: 'node9', credential: 'good' })
    const hello = coord.waitFor((f) => f.type === 'hello', 20_000)
    const cli = startCli(home)
    expect(await hello).toMatchObject({ max_jobs: 1, engines: [{ kind: 'llama.cpp' }] })
    await coord.waitFor((f) => f.type === 'heartbeat')
    cli.child.kill('SIGTERM')
    const res = await cli.exited
    expect(res.code).toBe(0)
    expect(res.stdout).toMatch(/connected \(\d+ cores/)
  })

  it('exits 1 with a message when the coordinator refuses the credential', async () => {
    const other = join(home, 'revoked')
    await writeCredentials(other, { server: coord.url, node_id: 'node9', credential: 'revoked' })
    const res = await startCli(other).exited
    expect(res.code).toBe(1)
    expect(res.stderr).toMatch(/refused this node's credential \(HTTP 401\)/)
  })
})
