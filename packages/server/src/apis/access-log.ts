/**
 * @module Request ids and the access log: every request gets an id (Hono's request-id middleware:
 * the caller's `X-Request-Id` when it is a sane one, else a new UUID, echoed in the response), every
 * line logged while it is handled carries it, and one `request` line per request says the route
 * pattern (not the URL: ids and filters stay out of the log), the status and the duration.
 */
import type { Hono, MiddlewareHandler } from 'hono'
import { requestId } from 'hono/request-id'
import { routePath } from 'hono/route'
import type { Logger } from 'pino'
import { log as processLog, withRequestId } from '../tools/log.ts'

export function accessLog(log: Logger = processLog): MiddlewareHandler {
  return async (c, next) => {
    const start = performance.now()
    const reqId = c.get('requestId' as never) as string
    await withRequestId(reqId, next)
    log.info(
      {
        reqId,
        method: c.req.method,
        route: routePath(c, -1) || c.req.path,
        status: c.res.status,
        ms: Math.round((performance.now() - start) * 10) / 10,
      },
      'request',
    )
  }
}

export function bindAccessLog(app: Hono, log?: Logger): void {
  app.use('*', requestId())
  app.use('*', accessLog(log))
}
