/**
 * @module Publishes rows the inference network wrote with Kysely (settlement, holds) as record
 * events, after their transaction committed, so realtime subscribers see them like any write.
 */
import type { CoreApp } from '../app.ts'
import { requireCollection } from '../collections/registry.ts'
import type { RecordAction } from '../records/record-events.ts'

export async function emitStored(
  core: CoreApp,
  collection: string,
  where: { column: string; value: string },
  action: RecordAction = 'update',
) {
  const def = requireCollection(collection)
  const rows = await core.database.db
    .selectFrom(collection)
    .selectAll()
    .where(where.column, '=', where.value)
    .execute()
  for (const row of rows) core.events.emit({ action, collection: def, row })
}

export const emitById = (
  core: CoreApp,
  collection: string,
  id: string,
  action: RecordAction = 'update',
) => emitStored(core, collection, { column: 'id', value: id }, action)

export const emitBalance = (core: CoreApp, user: string) =>
  emitStored(core, 'user_balances', { column: 'user', value: user })
