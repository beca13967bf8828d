/**
 * @module download-model-file
 * Downloads one model file with HTTP Range resume into `<name>.part`, verifies its sha256 and
 * renames it into place. Progress is reported at most every `progressIntervalMs`.
 */
import { createHash, type Hash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'

export interface DownloadModelFileOptions {
  url: string
  headers?: Record<string, string>
  directory: string
  fileName: string
  sha256: string
  sizeBytes: number
  signal?: AbortSignal
  /** Called with 0..100 while bytes arrive (throttled) and once with 100 at the end. */
  onProgress?: (percent: number) => void
  progressIntervalMs?: number
  /** Attempts in total; a broken transfer resumes from the bytes already written. */
  attempts?: number
  retryDelayMs?: number
}

/** The finished file's sha256 differs from the catalogue's; the partial file was removed. */
export class ChecksumMismatchError extends Error {
  override name = 'ChecksumMismatchError'
}

/** The server refused the download (status other than 200/206/416). */
export class DownloadHttpError extends Error {
  override name = 'DownloadHttpError'
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

/** Path of the partial file kept between attempts (and between agent runs). */
export function partialPath(directory: string, fileName: string): string {
  return join(directory, `${fileName}.part`)
}

/** Downloads and verifies; resolves with the final path. Never leaves a corrupt final file. */
export async function downloadModelFile(options: DownloadModelFileOptions): Promise<string> {
  const attempts = options.attempts ?? 3
  await mkdir(options.directory, { recursive: true })
  for (let attempt = 1; ; attempt++) {
    try {
      return await downloadOnce(options)
    } catch (err) {
      const fatal =
        options.signal?.aborted ||
        err instanceof ChecksumMismatchError ||
        (err instanceof DownloadHttpError && err.status < 500)
      if (fatal || attempt >= attempts) throw err
      await new Promise((r) => setTimeout(r, options.retryDelayMs ?? 500 * attempt))
    }
  }
}

async function downloadOnce(o: DownloadModelFileOptions): Promise<string> {
  const part = partialPath(o.directory, o.fileName)
  const have = await stat(part).then(
    (s) => s.size,
    () => 0,
  )
  const headers: Record<string, string> = { ...o.headers }
  if (have > 0) headers.range = `bytes=${have}-`
  const res = await fetch(o.url, { headers, signal: o.signal })

  let offset = 0
  if (res.status === 206 && have > 0) offset = have
  else if (res.status === 416 && have > 0) {
    // The partial file already holds every byte: only verification is left.
    await res.body?.cancel()
    return verifyAndFinish(o, part, await hashFile(part))
  } else if (res.status !== 200) {
    await res.body?.cancel()
    throw new DownloadHttpError(res.status, `Download failed with HTTP ${res.status}`)
  }
  if (!res.body) throw new DownloadHttpError(res.status, 'Download returned no body')

  const hash = offset > 0 ? await hashFile(part) : createHash('sha256')
  const total =
    o.sizeBytes > 0 ? o.sizeBytes : offset + Number(res.headers.get('content-length') ?? 0)
  let received = offset
  let lastReport = 0
  const report = () => {
    const now = Date.now()
    if (now - lastReport < (o.progressIntervalMs ?? 250)) return
    lastReport = now
    o.onProgress?.(total > 0 ? Math.min(99.9, (received / total) * 100) : 0)
  }
  const source = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream)
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk)
      received += chunk.length
      report()
      done(null, chunk)
    },
  })
  await pipeline(source, meter, createWriteStream(part, { flags: offset > 0 ? 'a' : 'w' }), {
    signal: o.signal,
  })
  return verifyAndFinish(o, part, hash)
}

async function verifyAndFinish(o: DownloadModelFileOptions, part: string, hash: Hash) {
  const digest = hash.digest('hex')
  if (digest !== o.sha256.toLowerCase()) {
    await rm(part, { force: true })
    throw new ChecksumMismatchError(
      `Checksum mismatch for ${o.fileName}: expected ${o.sha256}, got ${digest}`,
    )
  }
  const final = join(o.directory, o.fileName)
  await rename(part, final)
  o.onProgress?.(100)
  return final
}

async function hashFile(path: string): Promise<Hash> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
  return hash
}
