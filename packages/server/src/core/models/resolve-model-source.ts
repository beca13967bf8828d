/**
 * @module What a model source URL holds, read from its response headers without downloading it:
 * the file's size and sha256. The Hugging Face hub answers a `resolve` URL with a redirect to its
 * CDN and puts `X-Linked-Size` and `X-Linked-Etag` (the LFS object's sha256, quoted) on that
 * redirect, so redirects are followed by hand and every hop's headers are read. Other servers
 * give at least a size (Content-Length, or Content-Range for a one-byte Range request); a sha256
 * only comes from the hub's linked ETag (or an ETag that is itself a sha256).
 */
import { basename } from 'node:path'
import { describeNetworkError } from '@meshwork/node'

export interface ResolvedSource {
  sizeBytes: number
  /** Lower-case hex, or null when the source does not publish one. */
  sha256: string | null
  /** The file name the source URL names (its last path segment). */
  fileName: string
}

/** The source could not tell (unreachable, refused, or no size); the message says why. */
export class SourceResolveError extends Error {
  override name = 'SourceResolveError'
}

export interface ResolveOptions {
  timeoutMs?: number
  maxRedirects?: number
}

const SHA256 = /^[0-9a-f]{64}$/

/** The sha256 inside an ETag value (`"abc..."`, `W/"abc..."`), when it is one. */
export function sha256FromEtag(value: string | null): string | null {
  const v = value?.trim().replace(/^W\//, '').replace(/^"|"$/g, '').toLowerCase() ?? ''
  return SHA256.test(v) ? v : null
}

/** The file name a source URL names: its last path segment, decoded. */
export function fileNameOf(url: string): string {
  return decodeURIComponent(basename(new URL(url).pathname))
}

export async function resolveModelSource(
  url: string,
  options: ResolveOptions = {},
): Promise<ResolvedSource> {
  const host = new URL(url).host
  let size: number | null = null
  let sha: string | null = null
  let current = url
  for (let hop = 0; ; hop++) {
    const res = await request(current, 'HEAD', host, options.timeoutMs)
    size ??= positive(res.headers.get('x-linked-size'))
    sha ??= sha256FromEtag(res.headers.get('x-linked-etag'))
    const location = res.headers.get('location')
    if (res.status >= 300 && res.status < 400 && location) {
      if (hop >= (options.maxRedirects ?? 5))
        throw new SourceResolveError(`Too many redirects from ${host}.`)
      current = new URL(location, current).toString()
      continue
    }
    if (res.status === 405 || res.status === 501) {
      // No HEAD here: ask for one byte and read the total from Content-Range.
      const probe = await request(current, 'GET', host, options.timeoutMs, { range: 'bytes=0-0' })
      await probe.body?.cancel()
      size ??= positive(/\/(\d+)$/.exec(probe.headers.get('content-range') ?? '')?.[1] ?? null)
      if (!probe.ok) throw refused(host, probe)
      break
    }
    if (!res.ok) throw refused(host, res)
    size ??= positive(res.headers.get('content-length'))
    sha ??= sha256FromEtag(res.headers.get('etag'))
    break
  }
  if (size === null)
    throw new SourceResolveError(`The model source ${host} did not say the file's size.`)
  return { sizeBytes: size, sha256: sha, fileName: fileNameOf(url) }
}

async function request(
  url: string,
  method: 'HEAD' | 'GET',
  host: string,
  timeoutMs = 15_000,
  headers: Record<string, string> = {},
): Promise<Response> {
  try {
    return await fetch(url, {
      method,
      headers,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    })
  } catch (err) {
    const why =
      (err as Error)?.name === 'TimeoutError'
        ? `no answer within ${Math.round(timeoutMs / 1000)} s`
        : describeNetworkError(err)
    throw new SourceResolveError(`The model source ${host} could not be reached: ${why}.`, {
      cause: err,
    })
  }
}

function refused(host: string, res: Response): SourceResolveError {
  const status = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`
  return new SourceResolveError(`The model source ${host} answered ${status}.`)
}

function positive(value: string | null): number | null {
  const n = Number(value)
  return value !== null && Number.isSafeInteger(n) && n > 0 ? n : null
}
