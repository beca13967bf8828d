import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NODE_REPLACED_CLOSE_CODE } from '@meshwork/protocol'
import { writeCredentials } from '../src/auth/credentials-store.ts'
import { startFakeCoordinator, type FakeCoordinator } from '../src/test-support/fake-coordinator.ts'
import { startPlainServer } from '../src/test-support/plain-server.ts'

const BIN = new URL('../bin/meshwork-node.mjs', import.meta.url).pathname
const auth = { nodeId: 'node9', credential: 'good' }

function startCli(home: string, extra: string[] = []) {
  const child = spawn(process.execPath, [BIN, 'start', '--no-gpu', '--threads', '1', ...extra], {
    env: { ...process.env, MESHWORK_NODE_HOME: home },
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise<{
    code: number | null
    signal: NodeJS.Signals | null
    stdout: string
    stderr: string
  }>((r) => child.on('exit', (code, signal) => r({ code, signal, stdout, stderr })))
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
    expect(res.stdout).toMatch(new RegExp(`connected to ${coord.url} \\(\\d+ cores`))
    expect(res.stdout).toContain(`Choose what this node serves on My Nodes: ${coord.url}/nodes`)
  })

  it('names models, not record ids, in its log lines', async () => {
    const named = join(home, 'named')
    await writeCredentials(named, { server: coord.url, node_id: 'node9', credential: 'good' })
    const cli = startCli(named)
    await coord.waitFor((f) => f.type === 'heartbeat', 20_000)
    coord.send({
      type: 'desired_state',
      node_models: [
        {
          id: 'rec7h2k9x0q1w3e',
          model: {
            id: 'mdl5r8t2y6u4i9o',
            name: 'qwen2.5-0.5b-instruct',
            file_name: 'q.gguf',
            file_size_bytes: 4,
            sha256: 'a'.repeat(64),
          },
          requested_download: true,
          requested_serving: false,
        },
      ],
    })
    await coord.waitFor((f) => f.type === 'model_status' && !!f.error_message, 20_000)
    cli.child.kill('SIGTERM')
    const res = await cli.exited
    expect(res.stdout).toMatch(/qwen2\.5-0\.5b-instruct: not downloaded \(Download failed: /)
    expect(res.stdout).not.toContain('rec7h2k9x0q1w3e')
  })

  it('names the URL and the cause when it cannot connect, and keeps trying', async () => {
    const web = await startPlainServer()
    const closed = await startPlainServer()
    await closed.close()
    for (const [server, cause] of [
      [closed.url, 'connection refused'],
      [web.url, 'not a Meshwork server (it answered HTTP 404 to /api/nodes/ws)'],
    ]) {
      const dir = join(home, `unreachable-${cause.length}`)
      await writeCredentials(dir, { server, node_id: 'node9', credential: 'good' })
      const cli = startCli(dir)
      let out = ''
      cli.child.stdout.on('data', (d) => (out += d))
      const deadline = Date.now() + 20_000
      while ((out.match(/cannot connect/g) ?? []).length < 2 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50))
      cli.child.kill('SIGTERM')
      await cli.exited
      expect(out).toContain(`cannot connect to ${server}: ${cause}; retrying in`)
      expect((out.match(/cannot connect/g) ?? []).length).toBeGreaterThanOrEqual(2)
    }
    await web.close()
  })

  it('exits 0 on SIGTERM while it serves a model with llama.cpp', async () => {
    const { readFile } = await import('node:fs/promises')
    const stories = await readFile(
      new URL('../../../../shared/models/stories260K.gguf', import.meta.url),
    )
    const { createHash } = await import('node:crypto')
    coord.files.setFile('/api/models/m-stories/download', stories)
    const dir = join(home, 'serving')
    await writeCredentials(dir, { server: coord.url, node_id: 'node9', credential: 'good' })
    const cli = startCli(dir)
    await coord.waitFor((f) => f.type === 'heartbeat', 20_000)
    coord.send({
      type: 'desired_state',
      node_models: [
        {
          id: 'nm-stories',
          model: {
            id: 'm-stories',
            name: 'stories260K',
            file_name: 'stories260K.gguf',
            file_size_bytes: stories.length,
            sha256: createHash('sha256').update(stories).digest('hex'),
          },
          requested_download: true,
          requested_serving: true,
        },
      ],
    })
    await coord.waitFor((f) => f.type === 'model_status' && f.is_serving, 30_000)
    cli.child.kill('SIGTERM')
    const res = await cli.exited
    expect({ code: res.code, signal: res.signal }, res.stdout + res.stderr).toEqual({
      code: 0,
      signal: null,
    })
    expect(res.stdout).toMatch(/stories260K: serving at/)
  })

  it('stops with a message, not reconnecting, when another connection of this node replaced it', async () => {
    await writeCredentials(home, { server: coord.url, node_id: 'node9', credential: 'good' })
    const hello = coord.waitFor((f) => f.type === 'hello', 20_000)
    const cli = startCli(home)
    await hello
    const connections = coord.connections
    coord.closeWith(NODE_REPLACED_CLOSE_CODE, 'Replaced by a newer connection of this node')
    const res = await cli.exited
    expect(res.code).toBe(1)
    expect(res.stderr).toContain(
      `Another connection to ${coord.url} with this node's credential took its place`,
    )
    expect(res.stderr).toContain(`meshwork-node login --server ${coord.url}`)
    // Two copies reconnecting would take the node from each other for ever.
    expect(coord.connections).toBe(connections)
  })

  it('exits 1 with a message when the coordinator refuses the credential', async () => {
    const other = join(home, 'revoked')
    await writeCredentials(other, { server: coord.url, node_id: 'node9', credential: 'revoked' })
    const res = await startCli(other).exited
    expect(res.code).toBe(1)
    expect(res.stderr).toContain(
      `The coordinator at ${coord.url} refused this node's credential (HTTP 401): the credential was revoked or the node was deleted on My Nodes.`,
    )
    expect(res.stderr).toContain(`meshwork-node login --server ${coord.url} --force`)
  })
})
