/**
 * @module PocketBase's realtime transport: GET /api/realtime opens a server-sent events stream
 * (served straight on Node's response object, flushed per message), POST /api/realtime sets the
 * client's subscriptions.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Hono } from 'hono'
import { z } from 'zod'
import type { CoreApp } from '../core/app.ts'
import type { RealtimeHub } from '../core/realtime/realtime-hub.ts'
import { badRequest } from '../tools/api-error.ts'
import { callerOf, clientAddress } from './caller.ts'
import { readBody } from './request-body.ts'

const idleMs = 5 * 60_000
const maxLifetimeMs = 30 * 60_000

/** Frames one SSE message; names and data never contain newlines (keys are validated, data is JSON). */
function frame(id: string, event: string, data: string): string {
  return `id:${id}\nevent:${event}\ndata:${data}\n\n`
}

export function handleRealtimeStream(hub: RealtimeHub, req: IncomingMessage, res: ServerResponse) {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-store',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    'Access-Control-Allow-Origin': '*',
  })
  res.socket?.setNoDelay(true)
  let idle: NodeJS.Timeout
  const close = () => res.end()
  const resetIdle = () => {
    clearTimeout(idle)
    idle = setTimeout(close, idleMs)
  }
  const client = hub.connect(req.socket.remoteAddress ?? 'unknown', (event, data) => {
    if (event.includes('\n') || event.includes('\r')) return
    res.write(frame(client.id, event, data))
    resetIdle()
  })
  const lifetime = setTimeout(close, maxLifetimeMs)
  res.write(frame(client.id, 'PB_CONNECT', JSON.stringify({ clientId: client.id })))
  resetIdle()
  res.on('close', () => {
    clearTimeout(idle)
    clearTimeout(lifetime)
    hub.disconnect(client.id)
  })
}

const subscriptionBody = z.object({
  clientId: z.string().min(1).max(255),
  subscriptions: z.array(z.string().max(2500)).max(1000).default([]),
})

export function bindRealtime(app: Hono, core: CoreApp, hub: RealtimeHub) {
  app.post('/api/realtime', async (c) => {
    const parsed = subscriptionBody.safeParse(await readBody(c))
    if (!parsed.success) {
      const data: Record<string, { code: string; message: string }> = {}
      for (const issue of parsed.error.issues) {
        data[String(issue.path[0] ?? 'body')] = { code: 'validation_invalid_value', message: 'Invalid value.' }
      }
      throw badRequest('An error occurred while validating the submitted data.', data)
    }
    const caller = await callerOf(c, core.auth)
    hub.setSubscriptions(parsed.data.clientId, caller, clientAddress(c), parsed.data.subscriptions)
    return c.body(null, 204)
  })
}
