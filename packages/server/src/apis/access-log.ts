/**
 * @module Request ids and the access log: every request gets an id (the caller's `X-Request-Id`
 * when it is a sane one, else a new UUID, echoed in the response), every line logged while it is
 * handled carries it, and one `request` line per request says the route pattern (not the URL: ids
 * and filters stay out of the log), the status and the duration. The record-read shortcut
 * (record-read-shortcut.ts) answers outside Hono with the same two functions below.
 */
import type { Hono, MiddlewareHandler } from 'hono'
import { routePath } from 'hono/route'
import type { Logger } from 'pino'
import { log as processLog, requestLine, withRequestId } from '../tools/log.ts'

const unsafeId = /[^\w\-=]/

/** The request's id: the caller's (a proxy's) when sane, as Hono's request-id middleware decides. */
export function requestIdFor(given: string | undefined): string {
  return !given || given.length > 255 || unsafeId.test(given) ? crypto.randomUUID() : given
}

/** The one access line of a request; `start` is its `performance.now()` when it arrived. */
export function logRequest(
  log: Logger,
  reqId: string,
  method: string,
  route: string,
  status: number,
  start: number,
): void {
  const ms = Math.round((performance.now() - start) * 10) / 10
  requestLine(log, reqId, method, route, status, ms)
}

export function accessLog(log: Logger = processLog): MiddlewareHandler {
  return async (c, next) => {
    const start = performance.now()
    const reqId = requestIdFor(c.req.header('X-Request-Id'))
    c.set('requestId' as never, reqId as never)
    c.header('X-Request-Id', reqId)
    await withRequestId(reqId, next)
    logRequest(log, reqId, c.req.method, routePath(c, -1) || c.req.path, c.res.status, start)
  }
}

export function bindAccessLog(app: Hono, log?: Logger): void {
  app.use('*', accessLog(log))
}
