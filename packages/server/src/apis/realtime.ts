/**
 * @module PocketBase's realtime transport: GET /api/realtime opens a server-sent events stream
 * (served straight on Node's response object; the messages of one tick are written together, as
 * one chunk straight to the socket), POST /api/realtime sets the client's subscriptions.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Hono } from 'hono'
import { z } from 'zod'
import type { RealtimeService } from '../core/realtime/realtime-service.ts'
import { badRequest } from '../tools/api-error.ts'
import { log } from '../tools/log.ts'
import { clientAddress } from './caller.ts'
import { readBody } from './request-body.ts'

const idleMs = 5 * 60_000
const maxLifetimeMs = 30 * 60_000

/**
 * Most bytes a stream may hold in this process, written and not yet taken by the kernel (whose
 * own socket buffers hold a few MB more): four times the largest record a body can write (1 MiB),
 * so that no single event is cut. A client this far behind is tens of seconds behind at the
 * busiest a stream gets (a running answer's row, prompt included, twenty times a second); past
 * it the stream is cut, and its client reconnects and refetches (the SDK does so by itself), as
 * after any other end. Without it, a client that never read kept every byte sent to it here.
 */
export const REALTIME_BUFFER_LIMIT = 4 * 1024 * 1024

/** Frames one SSE message; names and data never contain newlines (keys are validated, data is JSON). */
function frame(id: string, event: string, data: string): string {
  return `id:${id}\nevent:${event}\ndata:${data}\n\n`
}

/**
 * Streams with messages waiting, written in order of their first message: each gets one write of
 * everything it was sent since (one chunk of the chunked response, one syscall), whatever the
 * number of events. At most `sliceSize` streams are written per turn of the event loop, so that
 * requests go on between slices while an event reaches thousands of streams (a write to a socket
 * costs 10-20 us here: 10,000 of them would hold the loop 100-200 ms), and an event that arrives
 * meanwhile joins the pending bytes of the streams not written yet.
 */
interface Pending {
  flush(now: number): void
}
const sliceSize = 500
let dirty: Pending[] = []
let cursor = 0
let scheduled = false

function flushSlice() {
  const now = Date.now()
  const end = Math.min(dirty.length, cursor + sliceSize)
  while (cursor < end) dirty[cursor++].flush(now)
  if (cursor < dirty.length) {
    if (cursor >= 4096) {
      dirty = dirty.slice(cursor)
      cursor = 0
    }
    setImmediate(flushSlice)
    return
  }
  dirty = []
  cursor = 0
  scheduled = false
}

function markDirty(stream: Pending) {
  dirty.push(stream)
  if (scheduled) return
  scheduled = true
  setImmediate(flushSlice)
}

const crlf = Buffer.from('\r\n')

/**
 * One chunk of the response's chunked body holding `pieces`, as one Buffer: the size line, the
 * bytes, CRLF. Written to the socket directly, it costs one write instead of res.write's three
 * (size, data, CRLF through a corked socket and a tick).
 */
function chunk(pieces: readonly Buffer[], size: number): Buffer {
  const head = `${size.toString(16)}\r\n`
  const out = Buffer.allocUnsafe(head.length + size + 2)
  let at = out.write(head, 0, 'latin1')
  for (const piece of pieces) at += piece.copy(out, at)
  crlf.copy(out, at)
  return out
}

export async function handleRealtimeStream(
  realtime: RealtimeService,
  req: IncomingMessage,
  res: ServerResponse,
  /** The client's address behind trusted proxies (client-origin.ts). */
  address: string,
) {
  let idle: NodeJS.Timeout | undefined
  let idleArmedAt = 0
  const close = () => res.end()
  const resetIdle = (now: number) => {
    // Re-armed at most once a second (the limit is minutes); refresh() re-arms the same timer.
    if (now - idleArmedAt < 1000) return
    idleArmedAt = now
    if (idle) idle.refresh()
    else idle = setTimeout(close, idleMs)
  }
  // Messages since the last write: the stream's id line before each message (PocketBase's
  // framing), the message bytes shared with every stream that gets the same event.
  let idLine: Buffer | null = null
  let pending: Buffer[] = []
  let size = 0
  const stream: Pending = {
    flush(now) {
      const pieces = pending
      const bytes = size
      pending = []
      size = 0
      const socket = res.socket
      if (!bytes || res.writableEnded || res.destroyed || !socket || socket.destroyed) return
      // The client has not taken what it was sent: cut, not buffered for ever (it reconnects).
      if (socket.writableLength > REALTIME_BUFFER_LIMIT) {
        log.warn({ address, buffered: socket.writableLength }, 'realtime: a stream not read is cut')
        res.destroy()
        return
      }
      // Chunked unless the client spoke HTTP/1.0 (then the body is the bytes, to the close).
      socket.write(res.chunkedEncoding ? chunk(pieces, bytes) : Buffer.concat(pieces, bytes))
      resetIdle(now)
    },
  }
  const client = await realtime.open(
    address,
    (frames) => {
      if (!idLine) return
      if (!size) markDirty(stream)
      for (const message of frames) {
        pending.push(idLine, message)
        size += idLine.length + message.length
      }
    },
    close,
  )
  if (!client) {
    const error = {
      data: {},
      message: 'Too many realtime connections from this address.',
      status: 429,
    }
    res.writeHead(429, { 'Content-Type': 'application/json' })
    res.end(JSON.stringify(error))
    return
  }
  if (res.destroyed) return realtime.close(client.id)
  const id = client.id
  idLine = Buffer.from(`id:${id}\n`)
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-store',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    'Access-Control-Allow-Origin': '*',
  })
  res.socket?.setNoDelay(true)
  const lifetime = setTimeout(close, maxLifetimeMs)
  res.write(frame(id, 'PB_CONNECT', JSON.stringify({ clientId: id })))
  resetIdle(Date.now())
  res.on('close', () => {
    clearTimeout(idle)
    clearTimeout(lifetime)
    realtime.close(id)
  })
}

const subscriptionBody = z.object({
  clientId: z.string().min(1).max(255),
  subscriptions: z.array(z.string().max(2500)).max(1000).default([]),
})

export function bindRealtime(app: Hono, realtime: RealtimeService) {
  app.post('/api/realtime', async (c) => {
    const parsed = subscriptionBody.safeParse(await readBody(c))
    if (!parsed.success) {
      const data: Record<string, { code: string; message: string }> = {}
      for (const issue of parsed.error.issues) {
        data[String(issue.path[0] ?? 'body')] = {
          code: 'validation_invalid_value',
          message: 'Invalid value.',
        }
      }
      throw badRequest('An error occurred while validating the submitted data.', data)
    }
    await realtime.subscribe({
      clientId: parsed.data.clientId,
      authorization: c.req.header('authorization') ?? '',
      address: clientAddress(c),
      keys: parsed.data.subscriptions,
    })
    return c.body(null, 204)
  })
}
