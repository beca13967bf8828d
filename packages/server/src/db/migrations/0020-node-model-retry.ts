/**
 * @module node_models.retry_requested_at: when the owner last asked the node to try a failed
 * download (or load) again now. It reaches the node as the desired state's `retry`.
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'

export const nodeModelRetry: Migration = {
  async up(db: Db) {
    await db.schema
      .alterTable('node_models')
      .addColumn('retry_requested_at', 'text', (c) => c.notNull().defaultTo(''))
      .execute()
  },
}
