/**
 * @module E-mail addresses as identities. They are unique and matched ignoring ASCII case (as
 * PocketBase's NOCASE index does) for sign-up, sign-in and the admin command line, on both
 * databases, through one expression (`emailKeySql`) that the unique index `idx_users_ci_email`
 * (migration 0004) is built on. Addresses under `meshwork.invalid` belong to the system (the house
 * account): no sign-up may take one.
 */
import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../../db/database.ts'
import { dialectOf } from '../../db/ddl.ts'
import { lowerSql } from '../../tools/filter/sql-values.ts'
import { asciiLower } from '../../tools/filter/values.ts'

/** RFC 2606 reserves `.invalid`: no real mailbox lives here, and sign-ups may not use it. */
export const SYSTEM_EMAIL_DOMAIN = 'meshwork.invalid'

/** The form an address is compared in: trimmed, ASCII letters lower-cased. */
export function emailKey(email: string): string {
  return asciiLower(email.trim())
}

/** The same comparison form computed by the database (what the unique index is built on). */
export function emailKeySql(db: Db, column = 'email'): RawBuilder<string> {
  return lowerSql(sql.ref(column), dialectOf(db)) as RawBuilder<string>
}

/** Whether the address is at the system's domain (or a subdomain of it). */
export function isSystemEmail(email: string): boolean {
  const key = emailKey(email)
  const domain = key.slice(key.lastIndexOf('@') + 1)
  return domain === SYSTEM_EMAIL_DOMAIN || domain.endsWith(`.${SYSTEM_EMAIL_DOMAIN}`)
}

/** The user whose address matches `email` ignoring case; the unique index allows one at most. */
export async function findUserByEmail(db: Db, email: string) {
  return db
    .selectFrom('users')
    .selectAll()
    .where(emailKeySql(db), '=', emailKey(email))
    .executeTakeFirst()
}
