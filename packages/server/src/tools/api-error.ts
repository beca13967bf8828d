/**
 * @module The one error type that crosses the HTTP edge. Its JSON is PocketBase's error shape
 * `{data, message, status}`; `message` is safe to show users, `cause` is logged, never sent.
 */

export interface FieldError {
  code: string
  message: string
  params?: Record<string, unknown>
}

export class ApiError extends Error {
  readonly status: number
  readonly data: Record<string, FieldError | unknown>
  /** Sent as Retry-After (seconds) when set: rate limits. */
  retryAfterSeconds = 0

  constructor(
    status: number,
    message: string,
    data: Record<string, unknown> = {},
    cause?: unknown,
  ) {
    super(sentenize(message), { cause })
    this.name = 'ApiError'
    this.status = status
    this.data = data
  }

  toJSON() {
    return { data: this.data, message: this.message, status: this.status }
  }
}

/** Upper-cases the first letter and ends with a full stop, as PocketBase does. */
export function sentenize(text: string): string {
  if (!text) return text
  const first = text[0].toUpperCase() + text.slice(1)
  return /[.?!]$/.test(first) ? first : `${first}.`
}

export const badRequest = (
  message = 'Something went wrong while processing your request.',
  data = {},
  cause?: unknown,
) => new ApiError(400, message, data, cause)
export const unauthorized = (message = 'The request requires valid record authorization token.') =>
  new ApiError(401, message)
export const forbidden = (message = 'Only superusers can perform this action.') =>
  new ApiError(403, message)
export const notFound = (message = "The requested resource wasn't found.") =>
  new ApiError(404, message)
/** PocketBase's 429; `retryAfterMs` becomes a Retry-After header (errors.ts). */
export function tooManyRequests(retryAfterMs = 0): ApiError {
  const err = new ApiError(429, 'Too Many Requests.')
  err.retryAfterSeconds = Math.ceil(retryAfterMs / 1000)
  return err
}

/** A validation failure on named fields, in PocketBase's shape. */
export function validationError(message: string, fields: Record<string, FieldError>): ApiError {
  const data: Record<string, FieldError> = {}
  for (const [name, err] of Object.entries(fields))
    data[name] = { ...err, message: sentenize(err.message) }
  return new ApiError(400, message, data)
}
