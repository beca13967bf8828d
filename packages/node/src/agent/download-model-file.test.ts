import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startModelFileServer, type ModelFileServer } from '../test-support/model-file-server.ts'
import { ChecksumMismatchError, downloadModelFile, partialPath } from './download-model-file.ts'

const file = randomBytes(600_000)
const sha256 = createHash('sha256').update(file).digest('hex')

describe('downloadModelFile', () => {
  let server: ModelFileServer
  let dir = ''
  beforeAll(async () => {
    server = await startModelFileServer({ '/f': file })
    dir = await mkdtemp(join(tmpdir(), 'mw-dl-'))
  })
  afterAll(async () => {
    await server.close()
    await rm(dir, { recursive: true, force: true })
  })
  const base = () => ({ url: `${server.url}/f`, directory: dir, sha256, sizeBytes: file.length })

  it('resumes with Range after the transfer breaks, verifies and reports progress', async () => {
    server.breakNext(1, 200_000)
    const progress: number[] = []
    const path = await downloadModelFile({
      ...base(),
      fileName: 'a.gguf',
      retryDelayMs: 10,
      progressIntervalMs: 0,
      onProgress: (p) => progress.push(p),
    })
    expect((await readFile(path)).equals(file)).toBe(true)
    const last = server.requests.slice(-2)
    expect(last[0].headers.range).toBeUndefined()
    expect(last[1].headers.range).toMatch(/^bytes=\d+-$/)
    expect(Number(/\d+/.exec(last[1].headers.range!)![0])).toBeGreaterThan(0)
    expect(progress.at(-1)).toBe(100)
    expect(progress.some((p) => p > 0 && p < 100)).toBe(true)
  })

  it('continues a .part file left by an earlier run', async () => {
    await writeFile(partialPath(dir, 'b.gguf'), file.subarray(0, 123_456))
    const path = await downloadModelFile({ ...base(), fileName: 'b.gguf' })
    expect((await readFile(path)).equals(file)).toBe(true)
    expect(server.requests.at(-1)!.headers.range).toBe('bytes=123456-')
  })

  it('rejects a checksum mismatch and removes the partial file', async () => {
    const run = downloadModelFile({ ...base(), sha256: 'a'.repeat(64), fileName: 'c.gguf' })
    await expect(run).rejects.toBeInstanceOf(ChecksumMismatchError)
    await expect(stat(join(dir, 'c.gguf'))).rejects.toThrow()
    await expect(stat(partialPath(dir, 'c.gguf'))).rejects.toThrow()
  })

  it('stops when aborted and keeps no final file', async () => {
    server.setPieceDelay(20)
    const ac = new AbortController()
    const run = downloadModelFile({
      ...base(),
      fileName: 'd.gguf',
      signal: ac.signal,
      progressIntervalMs: 0,
      onProgress: () => ac.abort(),
    })
    await expect(run).rejects.toThrow()
    server.setPieceDelay(0)
    await expect(stat(join(dir, 'd.gguf'))).rejects.toThrow()
  })
})

describe('downloadModelFile errors', () => {
  let server: ModelFileServer
  let dir = ''
  beforeAll(async () => {
    server = await startModelFileServer({ '/f': file })
    dir = await mkdtemp(join(tmpdir(), 'mw-dl-err-'))
  })
  afterAll(async () => {
    await server.close()
    await rm(dir, { recursive: true, force: true })
  })

  it("says why in the server's own words, not just the status", async () => {
    server.failNext(1, 502, {
      status: 502,
      message: 'The model source could not be reached: host not found (huggingface.co).',
      data: {},
    })
    const run = downloadModelFile({
      url: `${server.url}/f`,
      directory: dir,
      fileName: 'e.gguf',
      sha256,
      sizeBytes: file.length,
      attempts: 1,
    })
    await expect(run).rejects.toMatchObject({
      name: 'DownloadHttpError',
      status: 502,
      message:
        'Download failed: The model source could not be reached: host not found (huggingface.co). (HTTP 502 Bad Gateway)',
    })
  })

  it('names the address and the cause when the coordinator cannot be reached', async () => {
    const closed = await startModelFileServer({})
    const url = closed.url
    await closed.close()
    const run = downloadModelFile({
      url: `${url}/f`,
      directory: dir,
      fileName: 'f.gguf',
      sha256,
      sizeBytes: file.length,
      attempts: 1,
    })
    await expect(run).rejects.toMatchObject({
      status: 0,
      message: `Could not reach ${url} to download f.gguf: connection refused.`,
    })
  })

  it('gives up at once on a refusal (4xx) but tries a 5xx again', async () => {
    server.failNext(1, 404, {
      status: 404,
      message: "The requested resource wasn't found.",
      data: {},
    })
    const before = server.requests.length
    await expect(
      downloadModelFile({
        url: `${server.url}/f`,
        directory: dir,
        fileName: 'g.gguf',
        sha256,
        sizeBytes: file.length,
        retryDelayMs: 1,
      }),
    ).rejects.toMatchObject({ status: 404 })
    expect(server.requests.length - before).toBe(1)
    server.failNext(2, 503)
    const path = await downloadModelFile({
      url: `${server.url}/f`,
      directory: dir,
      fileName: 'g.gguf',
      sha256,
      sizeBytes: file.length,
      retryDelayMs: 1,
    })
    expect((await readFile(path)).equals(file)).toBe(true)
  })
})
