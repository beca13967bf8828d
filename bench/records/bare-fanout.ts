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

interface Stream {
  res: ServerResponse
  id: Buffer
  pending: Buffer[]
  size: number
}
const streams = new Set<Stream>()

function json(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'Content-Type': 'application/json' })
  res.end(text)
}

/**
 * Streams with events waiting, written as the coordinator writes them: one chunk per stream, 500
 * streams per turn of the event loop; an event that arrives meanwhile joins the next write of the
 * streams not written yet.
 */
let dirty: Stream[] = []
let cursor = 0
let scheduled = false

function flushSlice() {
  const end = Math.min(dirty.length, cursor + 500)
  while (cursor < end) {
    const stream = dirty[cursor++]
    const socket = stream.res.socket
    const head = Buffer.from(`${stream.size.toString(16)}\r\n`)
    const bytes = Buffer.concat([head, ...stream.pending, Buffer.from('\r\n')])
    stream.pending = []
    stream.size = 0
    if (socket && !socket.destroyed) socket.write(bytes)
  }
  if (cursor < dirty.length) return void setImmediate(flushSlice)
  dirty = []
  cursor = 0
  scheduled = false
}

function publish(message: Buffer) {
  for (const stream of streams) {
    if (!stream.size) dirty.push(stream)
    stream.pending.push(stream.id, message)
    stream.size += stream.id.length + message.length
  }
  if (!scheduled) {
    scheduled = true
    setImmediate(flushSlice)
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
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' })
      res.socket?.setNoDelay(true)
      res.write(`id:${clientId}\nevent:PB_CONNECT\ndata:{"clientId":"${clientId}"}\n\n`)
      const stream: Stream = { res, id: Buffer.from(`id:${clientId}\n`), pending: [], size: 0 }
      streams.add(stream)
      res.on('close', () => streams.delete(stream))
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
      publish(
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
