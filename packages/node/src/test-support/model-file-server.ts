/**
 * @module model-file-server
 * Test helper: an HTTP server that serves files with Range support and can cut a transfer short.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ModelFileServer {
  url: string
  server: Server
  requests: { url: string; headers: IncomingHttpHeaders }[]
  /** The next this-many responses are destroyed after sending this many bytes. */
  breakNext(count: number, afterBytes: number): void
  /** Delay between 64 KiB pieces, to keep a download in flight. */
  setPieceDelay(ms: number): void
  /** The next this-many requests are answered with this status and JSON body instead. */
  failNext(count: number, status: number, body?: unknown): void
  /** Serves (or replaces) a file from now on. */
  setFile(path: string, bytes: Buffer): void
  close(): Promise<void>
}

/** Serves `files[path]` (path like `/api/models/m1/download`); 404 elsewhere. */
export async function startModelFileServer(
  files: Record<string, Buffer>,
  requireAuth?: string,
): Promise<ModelFileServer> {
  const requests: ModelFileServer['requests'] = []
  let breaks = 0
  let breakAfter = 0
  let pieceDelay = 0
  let failures = 0
  let failure: { status: number; body?: unknown } = { status: 500 }
  const server: Server = createServer((req, res) => {
    requests.push({ url: req.url ?? '', headers: req.headers })
    if (failures > 0) {
      failures--
      res.writeHead(failure.status, { 'content-type': 'application/json' })
      return void res.end(failure.body === undefined ? '' : JSON.stringify(failure.body))
    }
    if (requireAuth && req.headers.authorization !== requireAuth) {
      res.writeHead(401).end()
      return
    }
    const file = files[req.url ?? '']
    if (!file) return res.writeHead(404).end()
    let start = 0
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '')
    if (m) {
      start = Number(m[1])
      if (start >= file.length) {
        res.writeHead(416, { 'content-range': `bytes */${file.length}` }).end()
        return
      }
      res.writeHead(206, {
        'content-length': file.length - start,
        'content-range': `bytes ${start}-${file.length - 1}/${file.length}`,
      })
    } else res.writeHead(200, { 'content-length': file.length, 'accept-ranges': 'bytes' })
    const limit = breaks > 0 ? (breaks--, start + breakAfter) : file.length
    let pos = start
    const send = () => {
      if (res.destroyed) return
      // Let the sent bytes reach the client before the reset, as a real broken transfer would.
      if (pos >= limit && limit < file.length) return void setTimeout(() => res.destroy(), 50)
      if (pos >= file.length) return void res.end()
      const end = Math.min(pos + 65536, limit, file.length)
      res.write(file.subarray(pos, end))
      pos = end
      setTimeout(send, pieceDelay)
    }
    send()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    breakNext: (count, afterBytes) => ((breaks = count), (breakAfter = afterBytes)),
    setPieceDelay: (ms) => (pieceDelay = ms),
    failNext: (count, status, body) => ((failures = count), (failure = { status, body })),
    setFile: (path, bytes) => void (files[path] = bytes),
    close: () => {
      server.closeAllConnections()
      return new Promise((r) => server.close(() => r()))
    },
  }
}
