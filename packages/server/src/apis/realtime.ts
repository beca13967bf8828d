/**
 * @module PocketBase's realtime transport: GET /api/realtime opens a server-sent events stream
 * (served straight on Node's response object; the messages of one tick are written together), POST /api/realtime sets the
 * client's subscriptions.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Hono } from 'hono'
import { z } from 'zod'
import type { RealtimeService } from '../core/realtime/realtime-service.ts'
import { badRequest } from '../tools/api-error.ts'
import { clientAddress } from './caller.ts'
import { readBody } from './request-body.ts'

const idleMs = 5 * 60_000
const maxLifetimeMs = 30 * 60_000

/** Frames one SSE message; names and data never contain newlines (keys are validated, data is JSON). */
function frame(id: string, event: string, data: string): string {
  return `id:${id}\nevent:${event}\ndata:${data}\n\n`
}

export async function handleRealtimeStream(
  realtime: RealtimeService,
  req: IncomingMessage,
  res: ServerResponse,
  /** The client's address behind trusted proxies (client-origin.ts). */
  address: string,
) {
  let idle: NodeJS.Timeout | undefined
  const close = () => res.end()
  const resetIdle = () => {
    // refresh() re-arms the same timer: far cheaper than clear + set once per event.
    if (idle) idle.refresh()
    else idle = setTimeout(close, idleMs)
  }
  let id = ''
  // Events of one tick go out in one write (one chunk, one socket write) per stream, in order.
  let pending = ''
  const flush = () => {
    const data = pending
    pending = ''
    if (!data || res.writableEnded || res.destroyed) return
    res.write(data)
    resetIdle()
  }
  const client = await realtime.open(address, (event, data) => {
    if (!id || event.includes('\n') || event.includes('\r')) return
    if (!pending) setImmediate(flush)
    pending += frame(id, event, data)
  })
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
  id = client.id
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
  resetIdle()
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
