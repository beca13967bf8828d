/**
 * @module A local server that behaves like the Hugging Face hub for model files: a `resolve` URL
 * answers 302 to a CDN URL and carries `X-Linked-Size` and `X-Linked-Etag` (the LFS file's
 * sha256, quoted) on that redirect; the CDN URL serves the bytes with Range (206, 416). Files can
 * be published without the linked headers (a plain web server) or made to fail.
 */
import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface HubFile {
  bytes: Buffer
  /** Leave out X-Linked-Size / X-Linked-Etag (a source that is not the hub). */
  plain?: boolean
  /** Answer HEAD with 405 (some servers do), so only a Range GET tells the size. */
  noHead?: boolean
}

export interface FakeHub {
  url: string
  /** `resolve` URL of a file in a repository, e.g. url('org/repo', 'model.gguf'). */
  fileUrl(repo: string, file: string): string
  publish(repo: string, file: string, entry: HubFile): void
  /** The next `count` requests to the resolve URLs answer this status. */
  failNext(count: number, status: number): void
  /** Resolve URLs answer only after this many ms (a slow source, to keep a download in flight). */
  setDelay(ms: number): void
  requests: Array<{ method: string; url: string; range?: string }>
  /** Serves every request with a redirect to itself (a broken source). */
  loop(path: string): void
  close(): Promise<void>
}

export async function startFakeHub(): Promise<FakeHub> {
  const files = new Map<string, HubFile>()
  const blobs = new Map<string, Buffer>()
  const requests: FakeHub['requests'] = []
  let failures = 0
  let failStatus = 500
  let delay = 0
  const loops = new Set<string>()
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (delay > 0 && /\/resolve\//.test(req.url ?? '')) {
      const wait = delay
      return void setTimeout(() => handle(req, res), wait).unref()
    }
    handle(req, res)
  })
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? ''
    if (loops.has(url)) return void res.writeHead(302, { location: url }).end()
    requests.push({ method: req.method ?? '', url, range: req.headers.range })
    const cdn = /^\/cdn\/([0-9a-f]{64})$/.exec(url.split('?')[0])
    if (cdn) return serveBlob(req, res, blobs.get(cdn[1]))
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(url.split('?')[0])
    const entry = resolve ? files.get(`${resolve[1]}/${resolve[2]}`) : undefined
    if (failures > 0 && resolve) {
      failures--
      return void res.writeHead(failStatus, { 'content-type': 'text/plain' }).end('hub trouble')
    }
    if (!entry) {
      return void res
        .writeHead(404, { 'x-error-code': 'EntryNotFound', 'content-type': 'text/plain' })
        .end('Entry not found')
    }
    const sha = createHash('sha256').update(entry.bytes).digest('hex')
    blobs.set(sha, entry.bytes)
    if (entry.noHead && req.method === 'HEAD') return void res.writeHead(405).end()
    if (entry.plain) return serveBlob(req, res, entry.bytes)
    res
      .writeHead(302, {
        location: `/cdn/${sha}?signature=fake`,
        'x-linked-size': String(entry.bytes.length),
        'x-linked-etag': `"${sha}"`,
        etag: '"0123456789abcdef0123456789abcdef01234567"',
        'x-repo-commit': 'c0ffee',
      })
      .end()
  }
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    fileUrl: (repo, file) => `${url}/${repo}/resolve/main/${file}`,
    publish: (repo, file, entry) => void files.set(`${repo}/${file}`, entry),
    failNext: (count, status) => ((failures = count), (failStatus = status)),
    setDelay: (ms) => void (delay = ms),
    loop: (path) => void loops.add(path),
    requests,
    close: () => {
      server.closeAllConnections()
      return new Promise((r) => server.close(() => r()))
    },
  }
}

function serveBlob(req: IncomingMessage, res: ServerResponse, bytes: Buffer | undefined) {
  if (!bytes) return void res.writeHead(404).end()
  const head = req.method === 'HEAD'
  const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '')
  if (m) {
    const start = Number(m[1])
    const end = m[2] ? Math.min(Number(m[2]), bytes.length - 1) : bytes.length - 1
    if (start >= bytes.length || start > end) {
      return void res.writeHead(416, { 'content-range': `bytes */${bytes.length}` }).end()
    }
    res.writeHead(206, {
      'content-length': end - start + 1,
      'content-range': `bytes ${start}-${end}/${bytes.length}`,
      'accept-ranges': 'bytes',
    })
    return void res.end(head ? undefined : bytes.subarray(start, end + 1))
  }
  res.writeHead(200, { 'content-length': bytes.length, 'accept-ranges': 'bytes' })
  res.end(head ? undefined : bytes)
}
