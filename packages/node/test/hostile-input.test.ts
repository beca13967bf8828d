/**
 * The agent against a hostile coordinator or model host, protecting the node owner's machine: a
 * download may not grow past the catalogue's size, an endless answer (an error page, a device
 * link) is not held in memory, and a password in `--server` is never printed.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { downloadModelFile, partialPath } from '../src/agent/download-model-file.ts'
import { isTransient } from '../src/agent/model-manager.ts'
import { LinkStartError, linkDevice } from '../src/auth/link-device.ts'
import { MissingCredentialsError, readCredentials } from '../src/auth/credentials-store.ts'
import { startFakeLinkServer } from '../src/test-support/fake-link-server.ts'

const BIN = new URL('../bin/meshwork-node.mjs', import.meta.url).pathname

/** Far more than any buffer between the two ends: reaching it means the agent read it all. */
const OFFERED = 64 * 2 ** 20

/**
 * Answers with `status` and a body of up to OFFERED bytes, written as fast as the agent reads;
 * `served()` says whether the agent took all of it before it hung up.
 */
async function startFloodServer(status: number) {
  let sentAll = false
  const server: Server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'text/plain' })
    const piece = Buffer.alloc(65536, 0x78)
    let sent = 0
    const pump = () => {
      while (!res.destroyed && sent < OFFERED) {
        sent += piece.length
        if (!res.write(piece)) return void res.once('drain', pump)
      }
      if (sent >= OFFERED) sentAll = true
      res.end()
    }
    pump()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/f`,
    served: () => sentAll,
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((r) => server.close(() => r()))
    },
  }
}

describe('downloads from a hostile host', () => {
  let dir = ''
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mw-hostile-'))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('stops a body that runs past the catalogue size, keeps none of it, and does not retry', async () => {
    const host = await startFloodServer(200)
    const run = downloadModelFile({
      url: host.url,
      directory: dir,
      fileName: 'big.gguf',
      sha256: 'a'.repeat(64),
      sizeBytes: 1000,
      attempts: 1,
    })
    const err = await run.catch((e: unknown) => e)
    await host.close()
    expect(err).toBeInstanceOf(Error)
    expect((err as Error).message).toMatch(/larger than the catalogue's 1000 bytes/)
    // The disk never held the flood: the agent hung up long before the host ran out.
    expect(host.served()).toBe(false)
    await expect(stat(partialPath(dir, 'big.gguf'))).rejects.toThrow()
    expect(await readdir(dir)).not.toContain('big.gguf')
    // Such a host is not a network hiccup: the owner decides (Retry), not a backoff loop.
    expect(isTransient(err)).toBe(false)
  })

  it('reads only the start of an endless error page', async () => {
    const host = await startFloodServer(503)
    const err = await downloadModelFile({
      url: host.url,
      directory: dir,
      fileName: 'e.gguf',
      sha256: 'a'.repeat(64),
      sizeBytes: 1000,
      attempts: 1,
    }).catch((e: unknown) => e)
    await host.close()
    expect(err).toMatchObject({ name: 'DownloadHttpError', status: 503 })
    expect((err as Error).message).toMatch(/^Download failed: x{10}/)
    expect(host.served()).toBe(false)
  })
})

describe('login against a hostile server', () => {
  it('reads only the start of an endless answer to start-flow', async () => {
    const host = await startFloodServer(200)
    const err = await linkDevice({
      server: new URL(host.url).origin,
      deviceName: 'laptop',
      onApproveUrl: () => {},
    }).catch((e: unknown) => e)
    await host.close()
    expect(err).toBeInstanceOf(LinkStartError)
    expect((err as Error).message).toMatch(/not a Meshwork server/)
    expect(host.served()).toBe(false)
  })
})

describe('login --server with a password in it', () => {
  it('refuses it without printing the password', async () => {
    const link = await startFakeLinkServer('approve', 0)
    const home = await mkdtemp(join(tmpdir(), 'mw-hostile-cli-'))
    const server = link.url.replace('http://', 'http://owner:s3cret@')
    const res = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile(
        process.execPath,
        [BIN, 'login', '--server', server, '--no-open'],
        { env: { ...process.env, MESHWORK_NODE_HOME: home } },
        (err, stdout, stderr) =>
          resolve({ code: err ? Number(err.code ?? 1) : 0, output: stdout + stderr }),
      )
    })
    await link.close()
    await rm(home, { recursive: true, force: true })
    expect(res.code).toBe(1)
    expect(res.output).toMatch(/must not contain a user name or password/)
    expect(res.output).not.toContain('s3cret')
  })
})

describe('a credentials file cut short', () => {
  it('reads as invalid, without quoting the credential', async () => {
    const home = await mkdtemp(join(tmpdir(), 'mw-hostile-creds-'))
    await writeFile(
      join(home, 'credentials.json'),
      '{"server":"http://127.0.0.1:1","node_id":"n","credential":cred_SECRET',
    )
    const err = await readCredentials(home).catch((e: unknown) => e)
    await rm(home, { recursive: true, force: true })
    // start-command turns this error into its "run login" advice.
    expect(err).toBeInstanceOf(MissingCredentialsError)
    expect((err as Error).message).not.toContain('SECRET')
  })
})
