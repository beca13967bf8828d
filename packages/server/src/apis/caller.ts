import type { Context } from 'hono'
import type { AuthService } from '../core/auth/auth-service.ts'
import type { Caller } from '../core/records/caller.ts'

/** Resolves (once per request) who is calling, from the Authorization header. */
export async function callerOf(c: Context, auth: AuthService): Promise<Caller> {
  const cached = c.get('caller' as never) as Caller | undefined
  if (cached) return cached
  const caller = await auth.callerFromHeader(c.req.header('authorization'))
  c.set('caller' as never, caller as never)
  return caller
}

/** The peer address, used for login throttling and realtime client pinning. */
export function clientAddress(c: Context): string {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming
  return incoming?.socket?.remoteAddress ?? 'unknown'
}
