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

/** What a person reads when the coordinator cannot be reached (instead of 'Failed to fetch'). */
export const UNREACHABLE_MESSAGE =
  'Cannot reach the Meshwork server. Check your connection and try again.'

/** Statuses a proxy answers for a coordinator that is down or restarting. */
const GATEWAY_STATUSES = new Set([502, 503, 504])

/**
 * True when the request never got an answer from the coordinator: fetch's TypeError, the
 * PocketBase SDK's status 0 (not an abort), or a proxy's 502/503/504 without an API body.
 */
export function isUnreachable(err: unknown): boolean {
  if (err instanceof TypeError) return true
  if (!err || typeof err !== 'object') return false
  const e = err as { status?: unknown; isAbort?: unknown; response?: { message?: unknown } }
  if (e.status === 0 && !e.isAbort && 'isAbort' in e) return true
  if (typeof e.status === 'number' && GATEWAY_STATUSES.has(e.status)) {
    // lib/api.ts words a bodyless answer 'HTTP {status}: {statusText}'; the SDK leaves no message.
    if (err instanceof ApiError) return err.message.startsWith('HTTP ')
    const apiMessage = e.response?.message
    return !(typeof apiMessage === 'string' && apiMessage)
  }
  return false
}

/** Best human message of any thrown value, with a fallback when it carries none. */
export function errorMessage(err: unknown, fallback: string): string {
  if (isUnreachable(err)) return UNREACHABLE_MESSAGE
  if (err && typeof err === 'object') {
    const response = (err as { response?: { message?: unknown } }).response
    if (response && typeof response.message === 'string' && response.message)
      return response.message
    const message = (err as { message?: unknown }).message
    if (typeof message === 'string' && message) return message
  }
  return fallback
}

const FIELD_LABELS: Record<string, string> = {
  email: 'Email',
  password: 'Password',
  passwordConfirm: 'Password confirmation',
  identity: 'Email',
  name: 'Name',
}

/**
 * The server's reasons per field ({data: {field: {message}}} in PocketBase's shape), each as
 * '{Field}: {message}', e.g. 'Password: Must be at least 8 character(s).'; empty when none.
 */
export function fieldReasons(err: unknown): string[] {
  if (!err || typeof err !== 'object') return []
  const e = err as { response?: { data?: unknown }; data?: unknown }
  const data =
    (e.response && typeof e.response === 'object' ? e.response.data : undefined) ?? e.data
  if (!data || typeof data !== 'object') return []
  const reasons: string[] = []
  for (const [field, detail] of Object.entries(data as Record<string, unknown>)) {
    const message = (detail as { message?: unknown } | null)?.message
    if (typeof message !== 'string' || !message) continue
    const label = FIELD_LABELS[field] ?? field.charAt(0).toUpperCase() + field.slice(1)
    reasons.push(`${label}: ${message}`)
  }
  return reasons
}
