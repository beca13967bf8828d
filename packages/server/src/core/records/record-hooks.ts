import type { Db } from '../../db/database.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import type { Row } from './serialize.ts'
import type { UnitOfWork } from './unit-of-work.ts'

/** Runs inside the write's unit of work: a failure rolls the whole write back; what it writes
 * through the unit is published with the write. */
export type TxHook = (uow: UnitOfWork, collection: CollectionDef, row: Row) => Promise<void>

/** Checks a client's update before it is written; returns field errors (empty when fine). */
export type UpdateCheck = (
  db: Db,
  existing: Row,
  values: Row,
) => Promise<Record<string, { code: string; message: string }>>

/** Extension points for other core modules (the ledger gives new users their credits here, and
 * ends open requests and closes accounts before they are deleted). */
export class RecordHooks {
  private afterCreate = new Map<string, TxHook[]>()
  private updateChecks = new Map<string, UpdateCheck[]>()

  onClientUpdate(collectionName: string, check: UpdateCheck): void {
    const list = this.updateChecks.get(collectionName) ?? []
    list.push(check)
    this.updateChecks.set(collectionName, list)
  }

  async checkClientUpdate(db: Db, collection: CollectionDef, existing: Row, values: Row) {
    const errors: Record<string, { code: string; message: string }> = {}
    for (const check of this.updateChecks.get(collection.name) ?? [])
      Object.assign(errors, await check(db, existing, values))
    return errors
  }

  private beforeDelete = new Map<string, TxHook[]>()

  /** Runs in the deleting transaction before the row (and the rows cascading from it) go. */
  onBeforeDelete(collectionName: string, hook: TxHook): void {
    const list = this.beforeDelete.get(collectionName) ?? []
    list.push(hook)
    this.beforeDelete.set(collectionName, list)
  }

  async runBeforeDelete(uow: UnitOfWork, collection: CollectionDef, row: Row): Promise<void> {
    for (const hook of this.beforeDelete.get(collection.name) ?? [])
      await hook(uow, collection, row)
  }

  onAfterCreate(collectionName: string, hook: TxHook): void {
    const list = this.afterCreate.get(collectionName) ?? []
    list.push(hook)
    this.afterCreate.set(collectionName, list)
  }

  hasAfterCreate(collection: CollectionDef): boolean {
    return Boolean(this.afterCreate.get(collection.name)?.length)
  }

  async runAfterCreate(uow: UnitOfWork, collection: CollectionDef, row: Row): Promise<void> {
    for (const hook of this.afterCreate.get(collection.name) ?? []) await hook(uow, collection, row)
  }
}
