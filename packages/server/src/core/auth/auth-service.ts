/**
 * @module Password sign-in, token refresh and resolving a request's Authorization header to a
 * caller. Invalid or expired tokens make the caller a guest, as PocketBase does.
 */
import type { Database } from '../../db/database.ts'
import { ApiError, badRequest, unauthorized } from '../../tools/api-error.ts'
import { requireCollection } from '../collections/registry.ts'
import { asUser, guest, type Caller } from '../records/caller.ts'
import type { RecordsService } from '../records/records-service.ts'
import type { RecordJson } from '../records/serialize.ts'
import type { Attempt, LoginThrottle } from './login-throttle.ts'
import { isEmail } from '../../tools/email.ts'
import { findUserByEmail } from './email-identity.ts'
import { dummyPasswordHash, verifyPassword } from './passwords.ts'
import {
  issueAuthToken,
  tokenExpiry,
  tokenFromHeader,
  verifyAuthToken,
  type TokenConfig,
} from './tokens.ts'

export interface AuthResponse {
  record: RecordJson
  token: string
}

export interface AuthService {
  callerFromHeader(header: string | undefined | null): Promise<Caller>
  /**
   * The caller at once where no token needs checking: a guest (no token) or a token verified a
   * moment ago (the cache below); undefined where callerFromHeader has to verify it.
   */
  callerNow(header: string | undefined | null): Caller | undefined
  /** The identity and password are checked for blanks at the HTTP edge (record-auth.ts). */
  loginWithPassword(identity: string, password: string, address: string): Promise<AuthResponse>
  /**
   * A password checked anywhere else (an update's `oldPassword`) is a guess like a sign-in's: it
   * counts on the account (`identity`, its e-mail) and the address, waits the same delay, and is
   * refused with 429 past the same limits. The caller reports a right password (`succeeded`).
   */
  passwordAttempt(identity: string, address: string): Promise<Attempt>
  refresh(caller: Caller, collectionName: string): Promise<AuthResponse>
  /** Drops a cached user after it changed (password, tokenKey) or was deleted. */
  forget(userId: string): void
}

const userCacheTtlMs = 30_000
const userCacheMax = 10_000

export function createAuthService(
  database: Database,
  records: RecordsService,
  tokens: TokenConfig,
  throttle: LoginThrottle,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): AuthService {
  const users = requireCollection('users')

  const respond = async (user: Record<string, unknown>): Promise<AuthResponse> => {
    const caller = asUser(user)
    const record = await records.present(caller, users, user)
    return { record: record!, token: issueAuthToken(tokens, user, users.id) }
  }

  // Verified tokens are cached briefly: every API call carries one, and re-reading the user row per
  // request dominated small requests. Any change to a user (through the bus, from every process)
  // evicts its entries, so a password change still revokes old tokens at once.
  const verified = new Map<string, { user: Record<string, unknown>; until: number }>()
  const byUser = new Map<string, Set<string>>()
  // Counts forgets: a user read before one (the password changing meanwhile) is not remembered,
  // or the old token would live on in the cache after the change.
  let forgets = 0
  // The token found last and its entry: a connection's requests mostly carry the same token, and
  // comparing it is cheaper than hashing its few hundred characters for the map. Forgetting any
  // user drops it.
  let lastToken = ''
  let lastHit: { user: Record<string, unknown>; until: number } | undefined
  const callerNow = (header: string | undefined | null): Caller | undefined => {
    const token = tokenFromHeader(header)
    if (!token) return guest
    const now = Date.now()
    let hit = token === lastToken ? lastHit : undefined
    // Expired: the map may hold a newer entry for it.
    if (!hit || hit.until <= now) hit = verified.get(token)
    if (!hit || hit.until <= now) return undefined
    lastToken = token
    lastHit = hit
    return asUser(hit.user)
  }

  return {
    callerNow,

    async callerFromHeader(header) {
      const known = callerNow(header)
      if (known) return known
      const token = tokenFromHeader(header)
      const before = forgets
      const user = await verifyAuthToken(tokens, database.db, token, users.id)
      if (!user) return guest
      if (forgets !== before) return asUser(user)
      if (verified.size >= userCacheMax) {
        verified.clear()
        byUser.clear()
      }
      const exp = tokenExpiry(token)
      verified.set(token, { user, until: Math.min(Date.now() + userCacheTtlMs, exp) })
      const id = user.id as string
      if (!byUser.has(id)) byUser.set(id, new Set())
      byUser.get(id)!.add(token)
      return asUser(user)
    },

    forget(userId) {
      forgets++
      lastToken = ''
      lastHit = undefined
      for (const token of byUser.get(userId) ?? []) verified.delete(token)
      byUser.delete(userId)
    },

    async loginWithPassword(identity, password, address) {
      const id = identity
      const attempt = await throttle.begin(address, id)
      if (attempt.delayMs > 0) await sleep(attempt.delayMs)

      const user = isEmail(id) ? await findUserByEmail(database.db, id) : undefined
      // Unknown identities still pay for a hash check, so timing does not reveal which e-mails exist.
      const ok = await verifyPassword(
        user ? (user.password as string) : await dummyPasswordHash(),
        password,
      )
      if (!user || !ok) throw badRequest('Failed to authenticate.')
      await attempt.succeeded()
      return respond(user)
    },

    async passwordAttempt(identity, address) {
      const attempt = await throttle.begin(address, identity)
      if (attempt.delayMs > 0) await sleep(attempt.delayMs)
      return attempt
    },

    async refresh(caller, collectionName) {
      const collection = requireCollection(collectionName)
      if (collection.type !== 'auth')
        throw new ApiError(404, 'Missing or invalid auth collection context.')
      if (!caller.auth) throw unauthorized()
      return respond(caller.auth)
    },
  }
}
