/**
 * The floor of realtime fan-out on this machine: a bare node:http server with just enough of the
 * API for bench/records' realtime part (sign-up, sign-in, models, health, the SSE stream and its
 * subscription, record creation) that writes each created record's event to every stream with
 * one socket write, as the coordinator does, and nothing else (no database, no rules, no
 * framework). Run as the coordinator, with the same client processes:
 *   BENCH_SERVER_MAIN=$PWD/bench/records/bare-fanout.ts PARTS=realtime SUBSCRIBERS=10000 npm run bench:records
 */
import { createServer, type ServerResponse } from 'node:http'
import { randomBytes } from 'node:crypto'

const streams = new Set<ServerResponse>()
let pending: Buffer[] = []

function json(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'Content-Type': 'application/json' })
  res.end(text)
}

/** One tick's events to every stream: one chunk per stream, as the coordinator writes them. */
function flush() {
  const data = Buffer.concat(pending)
  pending = []
  for (const res of streams) {
    const socket = res.socket
    if (!socket || socket.destroyed) continue
    const id = Buffer.from(`id:${(res as ServerResponse & { clientId: string }).clientId}\n`)
    const head = Buffer.from(`${(id.length + data.length).toString(16)}\r\n`)
    socket.write(Buffer.concat([head, id, data, Buffer.from('\r\n')]))
  }
}

const server = createServer((req, res) => {
  const url = req.url ?? ''
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : {}
    if (url === '/api/health') return json(res, 200, { code: 200 })
    if (url === '/api/collections/users/auth-with-password')
      return json(res, 200, { token: 'bare', record: { id: 'user' } })
    if (url.startsWith('/api/collections/models/records'))
      return json(res, 200, { items: [{ id: 'model' }] })
    if (url === '/api/realtime' && req.method === 'GET') {
      const clientId = randomBytes(20).toString('hex')
      Object.assign(res, { clientId })
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' })
      res.socket?.setNoDelay(true)
      res.write(`id:${clientId}\nevent:PB_CONNECT\ndata:{"clientId":"${clientId}"}\n\n`)
      streams.add(res)
      res.on('close', () => streams.delete(res))
      return
    }
    if (url === '/api/realtime') {
      res.writeHead(204)
      return res.end()
    }
    if (url === '/api/collections/conversations/records') {
      const record = {
        id: randomBytes(8).toString('hex'),
        collectionId: 'pbc_conversations',
        collectionName: 'conversations',
        user: 'user',
        model: body.model,
        title: body.title,
        created: new Date().toISOString(),
        updated: new Date().toISOString(),
      }
      if (!pending.length) setImmediate(flush)
      pending.push(
        Buffer.from(
          `event:conversations/*\ndata:${JSON.stringify({ action: 'create', record })}\n\n`,
        ),
      )
      return json(res, 200, record)
    }
    if (url === '/api/collections/users/records') return json(res, 200, { id: 'user' })
    json(res, 404, {})
  })
})
server.listen(Number(process.env.PORT ?? 18090), process.env.HOST ?? '127.0.0.1')
process.on('SIGTERM', () => process.exit(0))
