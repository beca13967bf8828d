/**
 * @module The one write path of core: a database transaction whose writes collect the record
 * changes they make (the rows come back from RETURNING, on both dialects, so nothing is read
 * again) and publish them as record events only once the transaction has committed. A rollback
 * publishes nothing. Each record changed is published once, with its committed state, in the order
 * the unit of work first touched it (a balance held and then debited is one update event).
 */
import type { UpdateQueryBuilder, UpdateResult } from 'kysely'
import type { Db } from '../../db/database.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import { findCollection } from '../collections/registry.ts'
import type { RecordAction, RecordChange, RecordEvents } from './record-events.ts'
import type { Row } from './serialize.ts'

// Tables are named at run time (Db is Kysely<any>), so the builder's tables are open too.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type UpdateQuery = UpdateQueryBuilder<any, any, any, UpdateResult>

export interface UnitOfWork {
  /** The open transaction: for reads, locks, and tables no subscriber sees (`_` tables). */
  readonly trx: Db
  /** INSERT ... RETURNING *: the stored row, published as a create. */
  insert(collection: string, values: Row): Promise<Row>
  /** UPDATE ... RETURNING *: the rows the query changed (none when its guard failed), each
   * published as an update. `build` adds the SET and WHERE parts. */
  update(collection: string, build: (query: UpdateQuery) => UpdateQuery): Promise<Row[]>
  /** A change this unit made another way (a delete, or a row as subscribers should see it: it
   * replaces the row collected for that record). */
  changed(action: RecordAction, collection: string | CollectionDef, row: Row): void
}

/** Where a unit of work writes and publishes: the core app has both. */
export interface WriteTarget {
  database: { db: Db }
  events: RecordEvents
}

/**
 * Runs `work` in one transaction and then publishes what it changed. Errors roll the whole
 * transaction back and reach the caller; nothing is published then.
 */
export async function withUnitOfWork<T>(
  target: WriteTarget,
  work: (uow: UnitOfWork) => Promise<T>,
): Promise<T> {
  const changes = new ChangeSet()
  const result = await target.database.db
    .transaction()
    .execute((trx) => work(unitOver(trx, changes)))
  for (const change of changes.list()) target.events.emit(change)
  return result
}

/**
 * A unit of work of one write statement, which commits by itself: no BEGIN and COMMIT round trips
 * (two of the three statements a lone UPDATE would cost). Its changes are published after it.
 * Work that writes twice, or reads what it then writes, needs `withUnitOfWork`.
 */
export async function withSingleWrite<T>(
  target: WriteTarget,
  work: (uow: UnitOfWork) => Promise<T>,
): Promise<T> {
  const changes = new ChangeSet()
  const result = await work(unitOver(target.database.db, changes))
  for (const change of changes.list()) target.events.emit(change)
  return result
}

function unitOver(trx: Db, changes: ChangeSet): UnitOfWork {
  return {
    trx,
    async insert(collection, values) {
      const row = (await trx
        .insertInto(collection)
        .values(values)
        .returningAll()
        .executeTakeFirstOrThrow()) as Row
      changes.add('create', collection, row)
      return row
    },
    async update(collection, build) {
      const rows = (await build(trx.updateTable(collection)).returningAll().execute()) as Row[]
      for (const row of rows) changes.add('update', collection, row)
      return rows
    },
    changed: (action, collection, row) => changes.add(action, collection, row),
  }
}

/** One change per record: its latest row, under the action it has for a subscriber. */
class ChangeSet {
  /** Map keeps the order of first insertion when a key is set again: the order of first touch. */
  private byRecord = new Map<string, RecordChange>()

  add(action: RecordAction, collection: string | CollectionDef, row: Row) {
    const def = typeof collection === 'string' ? findCollection(collection) : collection
    // A table of no collection (`_pending_earnings`, `_*` bookkeeping) has no subscribers.
    if (!def) return
    const key = `${def.name}/${String(row.id)}`
    const earlier = this.byRecord.get(key)?.action
    // Created and then changed in the same unit: still a create, with the final row.
    const first = earlier === 'create' && action === 'update' ? 'create' : action
    this.byRecord.set(key, { action: first, collection: def, row })
  }

  list(): RecordChange[] {
    return [...this.byRecord.values()]
  }
}
