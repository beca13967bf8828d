/**
 * @module API keys (issue 10): a user's secrets for programs calling `/v1`. The secret is shown
 * once, at creation; only its sha256 is kept (keys are 43 random characters, so a fast hash is
 * enough: nothing to brute-force). Revoking keeps the row (revoked set) so the history of what a
 * key spent still names it, and takes effect at the next call: nothing is cached.
 */
import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import { z } from 'zod'
import type { Db } from '../../db/database.ts'
import { withSingleWrite, withUnitOfWork, type WriteTarget } from '../records/unit-of-work.ts'
import { ApiError, notFound } from '../../tools/api-error.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId, randomString } from '../../tools/ids.ts'
import { fromUnits, toUnits } from '../ledger/credits.ts'

export const API_KEY_PREFIX = 'mw-'
/** Random characters after the prefix (base62: about 256 bits). */
export const API_KEY_RANDOM_LENGTH = 43
/** Active keys one user may hold: bounds what a hostile account can store. */
export const MAX_KEYS_PER_USER = 50
/** `last_used` is written at most this often per key (every call would be a write). */
export const LAST_USED_RESOLUTION_MS = 60_000

export interface ApiKeyListItem {
  id: string
  name: string
  hint: string
  created: string
  last_used: string
  /** Credits the key may spend in all; 0: no limit beyond the balance. */
  spend_limit: number
  /** Credits spent through the key so far, plus what its running requests hold. */
  spent: number
}

export interface CreatedApiKey extends ApiKeyListItem {
  /** The secret: in this answer only. */
  key: string
}

/** The key a `/v1` call presented. */
export interface ApiKeyIdentity {
  id: string
  user: string
  name: string
  spendLimit: number
}

const createSchema = z.object({
  name: z.string().trim().min(1).max(100),
  // Credits are exact thousandths: a limit finer than that is refused, not rounded. The check is
  // the ledger's own (toUnits), which every call with the key makes: a looser one let in limits
  // such as 0.0010000001 that then failed each call with a 500.
  spend_limit: z.number().finite().min(0).max(1e12).refine(isExactCredits).nullable().optional(),
})

function isExactCredits(credits: number): boolean {
  try {
    toUnits(credits)
    return true
  } catch {
    return false
  }
}

export const hashApiKey = (key: string) => createHash('sha256').update(key).digest('hex')

/** `mw-…wxyz`: enough to tell keys apart, far too little to guess one. */
export const keyHint = (key: string) => `${API_KEY_PREFIX}…${key.slice(-4)}`

export async function createApiKey(
  target: WriteTarget,
  user: string,
  body: unknown,
): Promise<CreatedApiKey> {
  const parsed = createSchema.safeParse(body ?? {})
  if (!parsed.success) {
    throw new ApiError(
      400,
      'A key needs a name of 1 to 100 characters and an optional spending limit of 0 or more (at most 3 decimal places).',
    )
  }
  const key = API_KEY_PREFIX + randomString(API_KEY_RANDOM_LENGTH)
  const now = nowDate()
  const row = {
    id: newRecordId(),
    user,
    name: parsed.data.name,
    hint: keyHint(key),
    key_hash: hashApiKey(key),
    spend_limit: parsed.data.spend_limit ?? 0,
    last_used: '',
    revoked: '',
    created: now,
    updated: now,
  }
  await withUnitOfWork(target, async (uow) => {
    const trx = uow.trx
    // The count and the insert in one transaction, after a write that serialises this user's
    // creations (a row lock on PostgreSQL; SQLite has one writer), so the cap cannot be raced.
    // The lock's write changes nothing anyone sees: it stays off the unit's events.
    await trx.updateTable('user_balances').set({ updated: now }).where('user', '=', user).execute()
    const active = await trx
      .selectFrom('api_keys')
      .select(sql<number>`count(*)`.as('n'))
      .where('user', '=', user)
      .where('revoked', '=', '')
      .executeTakeFirstOrThrow()
    if (Number(active.n) >= MAX_KEYS_PER_USER) {
      throw new ApiError(
        400,
        `You can have at most ${MAX_KEYS_PER_USER} API keys. Revoke one first.`,
      )
    }
    await uow.insert('api_keys', row)
  })
  return { ...toItem(row, 0), key }
}

export async function listApiKeys(db: Db, user: string): Promise<ApiKeyListItem[]> {
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'name', 'hint', 'created', 'last_used', 'spend_limit'])
    .where('user', '=', user)
    .where('revoked', '=', '')
    .orderBy('created', 'desc')
    .orderBy('id', 'desc')
    .execute()
  const items: ApiKeyListItem[] = []
  for (const row of rows) items.push(toItem(row, fromUnits(await keySpending(db, String(row.id)))))
  return items
}

/** Revokes the caller's key at once; another user's, an unknown or a revoked key is a 404. */
export async function revokeApiKey(target: WriteTarget, user: string, id: string): Promise<void> {
  const now = nowDate()
  const revoked = await withSingleWrite(target, (uow) =>
    uow.update('api_keys', (q) =>
      q
        .set({ revoked: now, updated: now })
        .where('id', '=', id)
        .where('user', '=', user)
        .where('revoked', '=', ''),
    ),
  )
  if (revoked.length !== 1) throw notFound()
}

/** The live key behind an `Authorization: Bearer mw-…` header, or null. */
export async function identifyApiKey(
  db: Db,
  header: string | undefined,
): Promise<ApiKeyIdentity | null> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  const key = match?.[1] ?? ''
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return null
  const row = await db
    .selectFrom('api_keys as k')
    .innerJoin('users as u', 'u.id', 'k.user')
    .select(['k.id', 'k.user', 'k.name', 'k.spend_limit', 'k.last_used'])
    .where('k.key_hash', '=', hashApiKey(key))
    .where('k.revoked', '=', '')
    .executeTakeFirst()
  if (!row) return null
  return {
    id: String(row.id),
    user: String(row.user),
    name: String(row.name),
    spendLimit: Number(row.spend_limit),
  }
}

/** Notes a use of the key (at most once per LAST_USED_RESOLUTION_MS). */
export async function touchApiKey(db: Db, id: string, now = new Date()): Promise<void> {
  const cutoff = new Date(now.getTime() - LAST_USED_RESOLUTION_MS).toISOString().replace('T', ' ')
  await db
    .updateTable('api_keys')
    .set({ last_used: now.toISOString().replace('T', ' ') })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used', '=', ''), eb('last_used', '<', cutoff)]))
    .execute()
}

/**
 * What a key has cost, in credit units: the debits of its settled requests plus the holds of its
 * running ones. Read from the ledger, so it follows settlement exactly, whatever settlement does.
 * One statement, so one snapshot: on PostgreSQL two would each see their own moment, and a request
 * settled between them would count in neither (its hold gone, its debit not yet seen).
 */
export async function keySpending(db: Db, keyId: string): Promise<number> {
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('user_credit_txs as t')
        .innerJoin('requests as r', 'r.id', 't.request')
        .select(sql<number>`COALESCE(SUM(t.amount), 0)`.as('n'))
        .where('r.api_key', '=', keyId)
        .where('t.type', '=', 'debit_inference_request')
        .as('debits'),
      eb
        .selectFrom('requests')
        .select(sql<number>`COALESCE(SUM(reserved), 0)`.as('n'))
        .where('api_key', '=', keyId)
        .where('status', 'in', ['pending', 'processing'])
        .as('held'),
    ])
    .executeTakeFirstOrThrow()
  return Number(row.debits) + Number(row.held)
}

/**
 * Inside a send's transaction: locks the key's row (so two sends through one key are sized one
 * after the other), checks it is still live and answers what it may still spend in credit units
 * (Infinity when it has no limit). The limit itself is kept in credits (at most 3 decimals).
 */
export async function lockKeyRoom(trx: Db, keyId: string): Promise<number> {
  const now = nowDate()
  const row = await trx
    .updateTable('api_keys')
    .set({ last_used: now })
    .where('id', '=', keyId)
    .where('revoked', '=', '')
    .returning(['spend_limit'])
    .executeTakeFirst()
  if (!row) throw new RevokedKeyError()
  const limit = Number(row.spend_limit)
  if (!(limit > 0)) return Infinity
  return Math.max(0, toUnits(limit) - (await keySpending(trx, keyId)))
}

export class RevokedKeyError extends Error {
  constructor() {
    super('This API key has been revoked.')
    this.name = 'RevokedKeyError'
  }
}

function toItem(
  row: {
    id: unknown
    name: unknown
    hint: unknown
    created: unknown
    last_used: unknown
    spend_limit: unknown
  },
  spent: number,
): ApiKeyListItem {
  return {
    id: String(row.id),
    name: String(row.name),
    hint: String(row.hint),
    created: String(row.created),
    last_used: String(row.last_used),
    spend_limit: Number(row.spend_limit),
    spent,
  }
}
