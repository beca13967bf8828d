/**
 * @module The records API as core functions: every call takes the caller and returns PocketBase
 * record JSON (with expand applied), so the HTTP layer only parses and responds.
 */
import type { Database } from '../../db/database.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import type { Caller } from './caller.ts'
import { expandRecords, parseExpand, validateExpand } from './expand.ts'
import type { RecordEvents } from './record-events.ts'
import type { RecordHooks } from './record-hooks.ts'
import {
  fetchVisible,
  listRecords,
  listRecordsNow,
  toJson,
  viewRecord,
  viewRecordNow,
  type ListQuery,
  type ListResult,
} from './records-read.ts'
import { createRecord, deleteRecord, updateRecord } from './records-write.ts'
import type { RecordJson, Row } from './serialize.ts'

export interface RecordsService {
  list(
    caller: Caller,
    collection: CollectionDef,
    query: ListQuery,
    expand?: string,
  ): Promise<ListResult>
  view(caller: Caller, collection: CollectionDef, id: string, expand?: string): Promise<RecordJson>
  /**
   * list and view (without expand) answered at once, without a promise, where the database can
   * answer without waiting (SQLite outside a transaction); undefined where only list and view
   * can. The same checks, rows and JSON; errors are thrown as they are.
   */
  listNow(caller: Caller, collection: CollectionDef, query: ListQuery): ListResult | undefined
  viewNow(caller: Caller, collection: CollectionDef, id: string): RecordJson | undefined
  create(caller: Caller, collection: CollectionDef, body: Row, expand?: string): Promise<RecordJson>
  update(
    caller: Caller,
    collection: CollectionDef,
    id: string,
    body: Row,
    expand?: string,
  ): Promise<RecordJson>
  delete(caller: Caller, collection: CollectionDef, id: string): Promise<void>
  /** A stored row as the caller may see it (owner flag computed), for responses and realtime. */
  present(
    caller: Caller,
    collection: CollectionDef,
    row: Row,
    expand?: string,
  ): Promise<RecordJson | null>
}

export function createRecordsService(
  database: Database,
  events: RecordEvents,
  hooks: RecordHooks,
): RecordsService {
  const deps = { database, events, hooks }
  const withExpand = async (
    caller: Caller,
    collection: CollectionDef,
    items: RecordJson[],
    expand?: string,
  ) => {
    if (expand && expand.trim())
      await expandRecords(database, caller, collection, items, parseExpand(expand))
    return items
  }
  const checkExpand = (collection: CollectionDef, expand?: string) => {
    if (expand && expand.trim()) validateExpand(collection, parseExpand(expand))
  }
  const present = async (caller: Caller, collection: CollectionDef, row: Row, expand?: string) => {
    // An empty rule: no access filter, just the owner flag for private fields.
    const [fresh] = await fetchVisible(database, caller, collection, [row.id as string], '')
    if (!fresh) return null
    const [json] = await withExpand(caller, collection, [toJson(collection, caller, fresh)], expand)
    return json
  }
  return {
    async list(caller, collection, query, expand) {
      checkExpand(collection, expand)
      const result = await listRecords(database, caller, collection, query)
      await withExpand(caller, collection, result.items, expand)
      return result
    },
    async view(caller, collection, id, expand) {
      checkExpand(collection, expand)
      const record = await viewRecord(database, caller, collection, id)
      return (await withExpand(caller, collection, [record], expand))[0]
    },
    listNow: (caller, collection, query) => listRecordsNow(database, caller, collection, query),
    viewNow: (caller, collection, id) => viewRecordNow(database, caller, collection, id),
    async create(caller, collection, body, expand) {
      checkExpand(collection, expand)
      const row = await createRecord(deps, caller, collection, body)
      // As for an update: a superuser's answer is the row the INSERT returned, unless a hook
      // changed it after.
      if (caller.superuser && !(expand && expand.trim()) && !hooks.hasAfterCreate(collection))
        return toJson(collection, caller, row)
      return (await present(caller, collection, row, expand)) ?? toJson(collection, caller, row)
    },
    async update(caller, collection, id, body, expand) {
      checkExpand(collection, expand)
      const row = await updateRecord(deps, caller, collection, id, body)
      // The row came back from the UPDATE, and a superuser sees every field whoever owns it:
      // without an expand there is nothing left to read.
      if (caller.superuser && !(expand && expand.trim())) return toJson(collection, caller, row)
      return (await present(caller, collection, row, expand)) ?? toJson(collection, caller, row)
    },
    delete: (caller, collection, id) => deleteRecord(deps, caller, collection, id),
    present,
  }
}
