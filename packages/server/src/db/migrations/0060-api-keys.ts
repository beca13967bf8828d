/**
 * @module API keys (issue 10): programs call `/v1` with a key instead of a session. Keys are
 * stored as sha256 hashes only; a revoked key keeps its row (revoked set) so the history of what
 * it spent still names it. Requests made through a key point at it and have no conversation.
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'
import { createIndex, createTable } from '../ddl.ts'

export const apiKeys: Migration = {
  async up(db: Db) {
    await createTable(db, 'api_keys', [
      ['user', 'text'],
      ['name', 'text'],
      ['hint', 'text'],
      ['key_hash', 'text'],
      ['spend_limit', 'number'],
      ['last_used', 'text'],
      ['revoked', 'text'],
      ['created', 'text'],
      ['updated', 'text'],
    ])
    await createIndex(db, 'api_keys', ['key_hash'], true)
    await createIndex(db, 'api_keys', ['user', 'created'])
    await db.schema
      .alterTable('requests')
      .addColumn('api_key', 'text', (c) => c.notNull().defaultTo(''))
      .execute()
    await createIndex(db, 'requests', ['api_key', 'status'])
  },
}
