/**
 * @module Holds awaiting a deleted request's charge (docs/inference-network.md, "Nothing stays
 * held"): a request deleted while a job was out keeps its hold in `user_balances.held` until the
 * scheduler has charged the part its node streamed. The hold no longer belongs to a request row
 * (it is gone), so it is recorded in the server-private `_deletion_holds`: one row per deleted
 * request (its id is the request's), its user, the held units and when it was kept (the sweep
 * releases one whose charge never came). Nothing existing is awaiting a charge.
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'
import { createIndex, createTable } from '../ddl.ts'

export const deletionHolds: Migration = {
  async up(db: Db) {
    await createTable(db, '_deletion_holds', [
      ['user', 'text'],
      ['amount', 'integer'],
      ['created', 'text'],
    ])
    await createIndex(db, '_deletion_holds', ['user'])
    await createIndex(db, '_deletion_holds', ['created'])
  },
}
