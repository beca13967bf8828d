/**
 * @module Every error leaves the API in PocketBase's shape. Anything that is not an ApiError is
 * logged and answered with a generic message: never a stack trace.
 */
import type { Context } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { ApiError } from '../tools/api-error.ts'

export function errorResponse(c: Context, err: ApiError) {
  return c.json(err.toJSON(), err.status as 400)
}

export function onError(err: Error, c: Context) {
  if (err instanceof ApiError) return errorResponse(c, err)
  if (err instanceof HTTPException) {
    const status = err.status
    return errorResponse(c, new ApiError(status, status === 413 ? 'Request entity too large.' : err.message || 'Something went wrong while processing your request.'))
  }
  console.error('Unhandled error on', c.req.method, c.req.path, err)
  return errorResponse(c, new ApiError(500, 'Something went wrong while processing your request.'))
}

export function onNotFound(c: Context) {
  return errorResponse(c, new ApiError(404, "The requested resource wasn't found."))
}
