/**
 * @module The one PocketBase client of the app.
 *
 * The coordinator serves the app and the API from one origin, so the client targets
 * window.location.origin (Vite proxies /api to the coordinator in development).
 *
 * Token storage: the SDK's LocalAuthStore keeps the token and user record in localStorage under
 * 'pocketbase_auth'. We keep it there on purpose: the API authenticates with an Authorization
 * header, not a cookie, so there is no CSRF surface; the trade-off is that an XSS bug could read
 * the token, which is why every piece of user-supplied markdown goes through rehype-sanitize.
 */
import PocketBase, { LocalAuthStore } from 'pocketbase'

function apiOrigin(): string {
  return typeof window === 'undefined' ? 'http://127.0.0.1:8090' : window.location.origin
}

export const pb = new PocketBase(apiOrigin(), new LocalAuthStore('pocketbase_auth'))

// Several queries may fetch the same collection at once (e.g. two screens mounted during a
// route change); the SDK's default auto-cancellation would reject the older one.
pb.autoCancellation(false)

/** The signed-in user as the client uses it (spec §3). */
export interface CurrentUser {
  id: string
  email: string
  name: string
  credits: number
}

/** Maps the SDK's auth record to the client's user shape. */
export function toCurrentUser(record: Record<string, unknown> | null): CurrentUser | null {
  if (!record || typeof record.id !== 'string') return null
  const email = typeof record.email === 'string' ? record.email : ''
  return {
    id: record.id,
    email,
    name: typeof record.name === 'string' && record.name ? record.name : email.split('@')[0],
    credits: typeof record.credits === 'number' ? record.credits : 0,
  }
}
