import type { Db } from '../../db/database.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import type { Row } from './serialize.ts'

/** Runs inside the write's database transaction: a failure rolls the whole write back. */
export type TxHook = (trx: Db, collection: CollectionDef, row: Row) => Promise<void>

/** Extension points for other core modules (the ledger gives new users their credits here). */
export class RecordHooks {
  private afterCreate = new Map<string, TxHook[]>()

  onAfterCreate(collectionName: string, hook: TxHook): void {
    const list = this.afterCreate.get(collectionName) ?? []
    list.push(hook)
    this.afterCreate.set(collectionName, list)
  }

  async runAfterCreate(trx: Db, collection: CollectionDef, row: Row): Promise<void> {
    for (const hook of this.afterCreate.get(collection.name) ?? []) await hook(trx, collection, row)
  }
}
