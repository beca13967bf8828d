/**
 * @module download-model-file
 * Downloads one model file with HTTP Range resume into `<name>.part`, verifies its sha256,
 * renames it into place and then records the verified hash in its sidecar (verify-model-file), so
 * a later start need not hash it again. Progress is reported at most every `progressIntervalMs`.
 * Whatever the catalogue's size says, a download never takes its disk below 1 GiB free.
 */
import { createHash, type Hash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, rename, rm, stat, statfs } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { describeNetworkError, errorCode } from './network-errors.ts'
import { readBodyStart } from './read-body-start.ts'
import { recordVerifiedHash, sidecarPath } from './verify-model-file.ts'

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
  /** Bytes free for the owner on the directory's disk (default: statfs); tests pretend. */
  freeBytes?: (directory: string) => Promise<number>
}

/**
 * Left free on the disk whatever the catalogue says: a coordinator may give any size, or none (0,
 * allowed for models added without one), and send bytes for ever. The owner's machine keeps
 * working; the download stops.
 */
const DISK_RESERVE_BYTES = 2 ** 30
/** How often, in bytes received, a transfer looks at the free space again. */
const DISK_CHECK_BYTES = 8 * 2 ** 20

/** The download would take the disk below its reserve; what it wrote was removed. */
export class NotEnoughDiskSpaceError extends Error {
  override name = 'NotEnoughDiskSpaceError'
}

/** The finished file's sha256 differs from the catalogue's; the partial file was removed. */
export class ChecksumMismatchError extends Error {
  override name = 'ChecksumMismatchError'
}

/**
 * The server sent more bytes than the catalogue's size: the file cannot be the catalogue's. The
 * transfer stops there (an endless body must not fill the disk) and the partial file is removed.
 */
class FileTooLargeError extends ChecksumMismatchError {
  override name = 'FileTooLargeError'
}

/** The server refused the download (status other than 200/206/416); status 0: unreachable. */
export class DownloadHttpError extends Error {
  override name = 'DownloadHttpError'
  constructor(
    readonly status: number,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}

/**
 * Why the server said no, in its own words: the `message` of a PocketBase-shaped error body
 * (the coordinator's "The model source could not be reached: ..."), else the start of a text
 * body, else the status line.
 */
async function refusal(res: Response): Promise<string> {
  const { text } = await readBodyStart(res, 2000)
  let message = ''
  try {
    const body = JSON.parse(text) as { message?: unknown }
    if (typeof body.message === 'string') message = body.message.trim()
  } catch {
    if (!/^\s*</.test(text)) message = text.trim().split('\n')[0].slice(0, 200)
  }
  const status = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`
  return message ? `${message} (${status})` : status
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
      const refused =
        err instanceof DownloadHttpError &&
        err.status > 0 &&
        err.status < 500 &&
        err.status !== 408 &&
        err.status !== 429
      const fatal =
        options.signal?.aborted ||
        err instanceof ChecksumMismatchError ||
        err instanceof NotEnoughDiskSpaceError ||
        refused
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
  const freeBytes = o.freeBytes ?? freeBytesOf
  const needed = Math.max(0, o.sizeBytes - have)
  const free = await freeBytes(o.directory)
  if (free - needed < DISK_RESERVE_BYTES) {
    throw new NotEnoughDiskSpaceError(
      `Not enough disk space for ${o.fileName}: it needs ${gib(needed)} more and ${gib(DISK_RESERVE_BYTES)} stays free; ${gib(free)} is free`,
    )
  }
  const headers: Record<string, string> = { ...o.headers }
  if (have > 0) headers.range = `bytes=${have}-`
  // An honest coordinator streams the file itself (model-download.ts). A redirect would point the
  // agent at any address, the owner's own network included, and the answer's start would go back
  // to the coordinator in error_message: none is followed.
  const res = await fetch(o.url, { headers, signal: o.signal, redirect: 'manual' }).catch(
    (err: unknown) => {
      if (o.signal?.aborted) throw err
      throw new DownloadHttpError(
        0,
        `Could not reach ${new URL(o.url).origin} to download ${o.fileName}: ${describeNetworkError(err)}.`,
        { cause: err },
      )
    },
  )

  let offset = 0
  if (res.status === 206 && have > 0) offset = have
  else if (res.status === 416 && have > 0) {
    // The partial file already holds every byte: only verification is left.
    await res.body?.cancel()
    return verifyAndFinish(o, part, await hashFile(part))
  } else if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel()
    throw new DownloadHttpError(
      res.status,
      `Download failed: the coordinator answered with a redirect (HTTP ${res.status}); the agent downloads only from the coordinator itself`,
    )
  } else if (res.status !== 200) {
    throw new DownloadHttpError(res.status, `Download failed: ${await refusal(res)}`)
  }
  if (!res.body) throw new DownloadHttpError(res.status, 'Download returned no body')

  const hash = offset > 0 ? await hashFile(part) : createHash('sha256')
  const total =
    o.sizeBytes > 0 ? o.sizeBytes : offset + Number(res.headers.get('content-length') ?? 0)
  let received = offset
  let spaceCheckedAt = offset
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
      if (o.sizeBytes > 0 && received + chunk.length > o.sizeBytes) {
        return done(
          new FileTooLargeError(
            `${o.fileName} is larger than the catalogue's ${o.sizeBytes} bytes: the download was stopped`,
          ),
        )
      }
      hash.update(chunk)
      received += chunk.length
      report()
      if (received - spaceCheckedAt < DISK_CHECK_BYTES) return done(null, chunk)
      spaceCheckedAt = received
      freeBytes(o.directory).then(
        (left) =>
          left < DISK_RESERVE_BYTES
            ? done(
                new NotEnoughDiskSpaceError(
                  `Not enough disk space for ${o.fileName}: the download was stopped with ${gib(left)} free`,
                ),
              )
            : done(null, chunk),
        done,
      )
    },
  })
  const sink = createWriteStream(part, { flags: offset > 0 ? 'a' : 'w' })
  await pipeline(source, meter, sink, { signal: o.signal }).catch(async (err: unknown) => {
    // Bytes that cannot be the catalogue's, or that would fill the disk: the disk gets them back.
    if (err instanceof FileTooLargeError || err instanceof NotEnoughDiskSpaceError) {
      await rm(part, { force: true })
      throw err
    }
    // A full disk is the owner's to fix; a transfer that broke off is tried again (resuming).
    if (o.signal?.aborted || /^E(NOSPC|ACCES|PERM|ROFS|DQUOT)$/.test(errorCode(err) ?? ''))
      throw err
    const at = total > 0 ? ` at ${Math.floor((received / total) * 100)}%` : ''
    throw new DownloadHttpError(
      0,
      `The download of ${o.fileName} broke off${at}: ${describeNetworkError(err)}.`,
      { cause: err },
    )
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
  // The order is what makes a kill at any point safe: a sidecar left from an earlier file goes
  // first, the new one is written only once the file is in place. Killed in between, the file
  // has no sidecar and is hashed on the next start.
  await rm(sidecarPath(final), { force: true })
  await rename(part, final)
  await recordVerifiedHash(final, digest)
  o.onProgress?.(100)
  return final
}

/** Free bytes for an unprivileged user; a file system that cannot say does not stop downloads. */
async function freeBytesOf(directory: string): Promise<number> {
  return statfs(directory).then(
    (s) => s.bavail * s.bsize,
    () => Infinity,
  )
}

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`
}

async function hashFile(path: string): Promise<Hash> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
  return hash
}
