/**
 * @module Request leases (issue 8): every open request names the coordinator process that owns it
 * (`lease_owner`, its process id). A process whose lease lapsed (it died) has its open requests
 * taken over by a surviving one (scheduler/takeover.ts). Not a field of the collection: never shown.
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'
import { createIndex } from '../ddl.ts'

export const requestLeases: Migration = {
  async up(db: Db) {
    await db.schema
      .alterTable('requests')
      .addColumn('lease_owner', 'text', (c) => c.notNull().defaultTo(''))
      .execute()
    // The takeover sweep reads the open requests every few seconds.
    await createIndex(db, 'requests', ['status'])
  },
}
