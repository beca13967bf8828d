/**
 * @module Every error leaves the API in PocketBase's shape. Anything that is not an ApiError is
 * logged and answered with a generic message: never a stack trace.
 */
import type { Context } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { ApiError } from '../tools/api-error.ts'
import { log } from '../tools/log.ts'

export function errorResponse(c: Context, err: ApiError) {
  if (err.retryAfterSeconds > 0) c.header('Retry-After', String(err.retryAfterSeconds))
  return c.json(err.toJSON(), err.status as 400)
}

export function onError(err: Error, c: Context) {
  if (err instanceof ApiError) return errorResponse(c, err)
  if (err instanceof HTTPException) {
    const status = err.status
    // The unread rest of a body too large is not read: the connection is closed after the answer,
    // and says so, or a client would send its next request on it and see it cut.
    if (status === 413) c.header('Connection', 'close')
    return errorResponse(
      c,
      new ApiError(
        status,
        status === 413
          ? 'Request entity too large.'
          : err.message || 'Something went wrong while processing your request.',
      ),
    )
  }
  const unavailable = unavailableError(err, c.req.method, c.req.path)
  if (unavailable) return errorResponse(c, unavailable)
  log.error({ method: c.req.method, path: c.req.path, err }, 'unhandled error')
  return errorResponse(c, new ApiError(500, 'Something went wrong while processing your request.'))
}

export function onNotFound(c: Context) {
  return errorResponse(c, new ApiError(404, "The requested resource wasn't found."))
}

/**
 * The 503 for an error that says the database (or another backend) cannot be reached right now,
 * logged once; null for any other error. Not the request's fault: the client may try again.
 */
export function unavailableError(err: Error, method: string, path: string): ApiError | null {
  if (!isUnavailable(err)) return null
  log.error({ method, path, err: err.message }, 'service unavailable')
  return new ApiError(503, 'The service is temporarily unavailable.')
}

function isUnavailable(err: Error): boolean {
  const code = String((err as { code?: unknown }).code ?? '')
  if (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH'].includes(code)
  )
    return true
  // PostgreSQL: connection exceptions (class 08), the server shutting down (57P01-57P03), a
  // statement it ended at statement_timeout (57014: waiting for a lock held too long), a session
  // it ended at idle_in_transaction_session_timeout (25P03). A statement PostgreSQL did not answer
  // at all fails with ETIMEDOUT (db/postgres-pool.ts).
  if (/^08|^57P0[123]$|^57014$|^25P03$/.test(code)) return true
  return /Connection terminated|timeout exceeded when trying to connect|Connection is closed/i.test(
    err.message,
  )
}
