import type { IncomingMessage } from 'node:http'
import type { Context } from 'hono'
import type { AuthService } from '../core/auth/auth-service.ts'
import type { Caller } from '../core/records/caller.ts'
import { createOriginResolver, type ClientOrigin, type OriginResolver } from './client-origin.ts'

/** Resolves (once per request) who is calling, from the Authorization header. */
export async function callerOf(c: Context, auth: AuthService): Promise<Caller> {
  const cached = c.get('caller' as never) as Caller | undefined
  if (cached) return cached
  const caller = await auth.callerFromHeader(c.req.header('authorization'))
  c.set('caller' as never, caller as never)
  return caller
}

/**
 * Where the request comes from, behind trusted proxies (client-origin.ts); resolved once per
 * request with the resolver the router put in the context.
 */
export function clientOrigin(c: Context): ClientOrigin {
  const cached = c.get('clientOrigin' as never) as ClientOrigin | undefined
  if (cached) return cached
  const resolve = (c.get('resolveOrigin' as never) as OriginResolver | undefined) ?? untrusting
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming
  const origin = incoming
    ? resolve(incoming)
    : { address: 'unknown', host: 'localhost', proto: 'http' as const }
  c.set('clientOrigin' as never, origin as never)
  return origin
}

const untrusting = createOriginResolver()

/** The client address, used for rate limits (login, sign-up, link flows) and realtime limits. */
export function clientAddress(c: Context): string {
  return clientOrigin(c).address
}
