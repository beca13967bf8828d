/**
 * @module Pending earnings (issue 13, point 4): what a node on probation earned is held until the
 * node is verified (then paid to its owner) or caught (then returned to the users who paid). One
 * server-private row per paid request in `_pending_earnings`; running totals on the owner's
 * balance (`user_balances.pending_earnings`) and on the node (`nodes.pending_earnings`, shown to
 * its owner), both in integer units like every other amount. Nothing existing is pending: every
 * request paid before this migration was paid to its owner already.
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'
import { createIndex, createTable } from '../ddl.ts'

export const pendingEarnings: Migration = {
  async up(db: Db) {
    for (const table of ['user_balances', 'nodes']) {
      await db.schema
        .alterTable(table)
        .addColumn('pending_earnings', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute()
    }
    await createTable(db, '_pending_earnings', [
      ['request', 'text'],
      ['node', 'text'],
      ['owner', 'text'],
      ['payer', 'text'],
      ['amount', 'integer'],
      // pending | released (paid to the owner) | reversed (returned to the payer) | forfeited
      ['status', 'text'],
      ['created', 'text'],
      ['updated', 'text'],
    ])
    await createIndex(db, '_pending_earnings', ['node', 'status'])
    await createIndex(db, '_pending_earnings', ['request'])
  },
}
