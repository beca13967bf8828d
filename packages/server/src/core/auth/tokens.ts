/**
 * @module Auth tokens, PocketBase-style: HS256 JWTs with claims {id, collectionId, type, exp,
 * refreshable}, signed with the record's tokenKey + the server secret, so changing the password
 * (a new tokenKey) revokes every older token.
 */
import jwt from 'jsonwebtoken'
import type { Db } from '../../db/database.ts'
import type { Row } from '../records/serialize.ts'

export interface TokenConfig {
  secret: string
  /** Lifetime in seconds; PocketBase's default for auth collections is 5 days. */
  ttlSeconds: number
}

interface Claims {
  id: string
  collectionId: string
  type: string
  refreshable?: boolean
  exp: number
}

export function issueAuthToken(config: TokenConfig, user: Row, collectionId: string): string {
  const claims = { id: user.id, collectionId, type: 'auth', refreshable: true }
  return jwt.sign(claims, `${user.tokenKey}${config.secret}`, {
    algorithm: 'HS256',
    expiresIn: config.ttlSeconds,
    noTimestamp: true,
  })
}

/** The users row the token belongs to, or null for any invalid, expired or revoked token. */
export async function verifyAuthToken(
  config: TokenConfig,
  db: Db,
  token: string,
  collectionId: string,
): Promise<Row | null> {
  const claims = jwt.decode(token) as Partial<Claims> | null
  if (
    !claims ||
    typeof claims.id !== 'string' ||
    claims.type !== 'auth' ||
    claims.collectionId !== collectionId
  ) {
    return null
  }
  const user = (await db
    .selectFrom('users')
    .selectAll()
    .where('id', '=', claims.id)
    .executeTakeFirst()) as Row | undefined
  if (!user) return null
  try {
    jwt.verify(token, `${user.tokenKey}${config.secret}`, { algorithms: ['HS256'] })
    return user
  } catch {
    return null
  }
}

/** Strips an optional, case-insensitive "Bearer " (the SDK sends the raw token). */
export function tokenFromHeader(header: string | undefined | null): string {
  if (!header) return ''
  return header.replace(/^bearer\s+/i, '').trim()
}

/** The token's expiry in epoch milliseconds (0 when unreadable). */
export function tokenExpiry(token: string): number {
  const claims = jwt.decode(token) as Partial<Claims> | null
  return typeof claims?.exp === 'number' ? claims.exp * 1000 : 0
}
