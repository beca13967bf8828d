/**
 * @module E-mails are unique ignoring ASCII case. Before, `Bob@x.com` and `bob@x.com` could be two
 * accounts. For each such group of look-alikes, one keeps the address: a verified account first,
 * then the oldest (created, then id). Every other one is renamed to
 * `<its id>@renamed.meshwork.invalid` and can no longer sign in by e-mail until an operator gives
 * it an address (`npm run admin -- set-email`); nothing else about it changes (password, balance,
 * conversations, nodes). Accounts that had registered an address under `meshwork.invalid`, now
 * reserved for the system (the house account), are renamed the same way. Each rename is kept in
 * `_email_renames` (user, original address, why) and printed. Then the unique index on the
 * lower-cased address is created, on which sign-up, sign-in and the admin CLI rely.
 * Frozen once released.
 */
import { sql, type Migration } from 'kysely'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'
import type { Db } from '../database.ts'
import { createIndex, createTable, dialectOf } from '../ddl.ts'

const upper = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
const lower = 'abcdefghijklmnopqrstuvwxyz'
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase())

export const emailCase: Migration = {
  async up(db: Db) {
    const dialect = dialectOf(db)
    const run = async (trx: Db) => {
      await createTable(trx, '_email_renames', [
        ['user', 'text'],
        ['original_email', 'text'],
        ['reason', 'text'],
        ['created', 'text'],
      ])
      await createIndex(trx, '_email_renames', ['user'])
      const users = await trx
        .selectFrom('users')
        .select(['id', 'email', 'verified', 'created'])
        .orderBy('verified', 'desc')
        .orderBy('created')
        .orderBy('id')
        .execute()
      const owners = new Set<string>()
      for (const u of users) {
        const email = String(u.email)
        const key = asciiLower(email.trim())
        const domain = key.slice(key.lastIndexOf('@') + 1)
        const reserved = domain === 'meshwork.invalid' || domain.endsWith('.meshwork.invalid')
        if (!reserved && !owners.has(key)) {
          owners.add(key)
          continue
        }
        const renamed = `${u.id}@renamed.meshwork.invalid`
        await trx.updateTable('users').set({ email: renamed }).where('id', '=', u.id).execute()
        await trx
          .insertInto('_email_renames')
          .values({
            id: newRecordId(),
            user: u.id,
            original_email: email,
            reason: reserved ? 'reserved' : 'lookalike',
            created: nowDate(),
          })
          .execute()
        console.warn(
          `Migration 0004: account ${u.id} (${email}) renamed to ${renamed}: ${reserved ? 'the domain is reserved' : 'another account has this address'}`,
        )
      }
      // The expression is the one sign-up, sign-in and the CLI compare with (ASCII lower-casing on both).
      const key =
        dialect === 'sqlite'
          ? sql`lower(email)`
          : sql`translate(email, ${sql.lit(upper)}, ${sql.lit(lower)})`
      await sql`CREATE UNIQUE INDEX idx_users_ci_email ON users (${key})`.execute(trx)
    }
    if (!db.isTransaction) await db.transaction().execute(run)
    else await run(db)
  },
}
