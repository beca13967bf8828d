/**
 * @module A send may carry its client's idempotency key (core/chat/repeated-send.ts): the same
 * message sent again under it, after an answer that never came, answers the request it stored.
 * Keys belong to their user; a request's id is always the server's own. Not a field of the
 * collection: never shown.
 */
import { sql, type Migration } from 'kysely'
import type { Db } from '../database.ts'

export const idempotencyKeys: Migration = {
  async up(db: Db) {
    await db.schema
      .alterTable('requests')
      .addColumn('idempotency_key', 'text', (c) => c.notNull().defaultTo(''))
      .execute()
    // One request per key and user: two sends of one message at once store one.
    await db.schema
      .createIndex('idx_requests_user_idempotency_key')
      .on('requests')
      .columns(['user', 'idempotency_key'])
      .unique()
      .where(sql.ref('idempotency_key'), '<>', '')
      .execute()
  },
}
