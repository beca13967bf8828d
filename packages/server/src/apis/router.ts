/**
 * @module Every HTTP route of the coordinator, mounted on one Hono app: reading this file lists the API.
 */
import { Hono } from 'hono'
import { cors } from 'hono/cors'
import { bodyLimit } from 'hono/body-limit'
import type { CoreApp } from '../core/app.ts'
import type { RealtimeService } from '../core/realtime/realtime-service.ts'
import { badRequest } from '../tools/api-error.ts'
import { urlHasNul } from '../tools/nul.ts'
import type { OriginResolver } from './client-origin.ts'
import { onError, onNotFound } from './errors.ts'
import { bindAccessLog } from './access-log.ts'
import { checkUrlLimits, MAX_BODY_BYTES } from './input-limits.ts'
import type { Metrics } from './metrics.ts'
import { bindHealth } from './health.ts'
import { bindRealtime } from './realtime.ts'
import { bindRecordAuth } from './record-auth.ts'
import { bindRecordCrud } from './record-crud.ts'

export interface RouterParts {
  core: CoreApp
  realtime: RealtimeService
  /** Extra route groups (chat, nodes, static web app) mounted after the core API. */
  extra?: Array<(app: Hono) => void>
  /** Prometheus metrics, when configured. */
  metrics?: Metrics
  /** Client address, host and scheme behind trusted proxies; none trusted when absent. */
  resolveOrigin?: OriginResolver
}

export function createRouter({
  core,
  realtime,
  extra = [],
  metrics,
  resolveOrigin,
}: RouterParts): Hono {
  const app = new Hono()
  app.onError(onError)
  app.notFound(onNotFound)
  bindAccessLog(app)
  if (resolveOrigin) {
    app.use('*', (c, next) => {
      c.set('resolveOrigin' as never, resolveOrigin as never)
      return next()
    })
  }
  if (metrics) app.use('*', metrics.middleware)
  // Every response carries `Access-Control-Allow-Origin: *`, set on the node response in server.ts;
  // Hono's cors answers the preflight only (touching its Response headers on every request cost a
  // tenth of a list request). Bodies are limited where a method has one.
  const preflight = cors({
    origin: '*',
    allowMethods: ['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE'],
  })
  const limit = bodyLimit({ maxSize: MAX_BODY_BYTES })
  app.use('/api/*', (c, next) => {
    if (urlHasNul(c.req.url)) throw badRequest('Text may not contain NUL characters.')
    const method = c.req.method
    if (method === 'OPTIONS') return preflight(c, next)
    checkUrlLimits(c)
    if (method === 'GET' || method === 'HEAD') return next()
    // A declared length within the limit needs no counting (node's parser reads exactly that
    // many bytes), and Hono's counter would turn the request into a web Request with a stream
    // body, the slow way to read it (a quarter of a millisecond on every POST).
    const declared = c.req.header('content-length')
    const chunked = c.req.header('transfer-encoding') !== undefined
    if (declared !== undefined && !chunked && Number(declared) <= MAX_BODY_BYTES) return next()
    return limit(c, next)
  })
  bindHealth(app, core)
  bindRecordAuth(app, core)
  bindRecordCrud(app, core)
  bindRealtime(app, realtime)
  metrics?.bind(app)
  for (const bind of extra) bind(app)
  return app
}
