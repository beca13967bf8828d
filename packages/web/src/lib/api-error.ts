/** An error answered by the API in PocketBase's shape {status, message, data}. */
export class ApiError extends Error {
  readonly status: number
  readonly data: Record<string, unknown>

  constructor(status: number, message: string, data: Record<string, unknown> = {}) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.data = data
  }
}

/** Best human message of any thrown value, with a fallback when it carries none. */
export function errorMessage(err: unknown, fallback: string): string {
  if (err && typeof err === 'object') {
    const response = (err as { response?: { message?: unknown } }).response
    if (response && typeof response.message === 'string' && response.message) return response.message
    const message = (err as { message?: unknown }).message
    if (typeof message === 'string' && message) return message
  }
  return fallback
}
