/**
 * @module PocketBase's `expand`: relation fields become objects (back-relations `x_via_y` arrays),
 * nested up to 6 levels, each related record checked against its collection's view rule. Unlike
 * PocketBase, which ignores them, a path that names no relation is a 400, so typos surface.
 */
import { sql } from 'kysely'
import type { Database } from '../../db/database.ts'
import { ApiError, badRequest } from '../../tools/api-error.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import { findCollection, findField } from '../collections/registry.ts'
import type { Caller } from './caller.ts'
import { fetchVisible, toJson } from './records-read.ts'
import type { RecordJson, Row } from './serialize.ts'

type ExpandTree = Map<string, ExpandTree>
const maxDepth = 6

export function parseExpand(text: string): ExpandTree {
  const root: ExpandTree = new Map()
  for (const path of text.replace(/\s+/g, '').split(',')) {
    if (!path) continue
    let node = root
    for (const key of path.split('.').slice(0, maxDepth)) {
      if (!node.has(key)) node.set(key, new Map())
      node = node.get(key)!
    }
  }
  return root
}

/** Throws a 400 for a path that does not name a relation (or back-relation) at each step. */
export function validateExpand(collection: CollectionDef, tree: ExpandTree, prefix = ''): void {
  for (const [key, subtree] of tree) {
    const path = prefix ? `${prefix}.${key}` : key
    const target = relationTarget(collection, key)
    if (!target)
      throw badRequest(`Invalid expand: "${path}" is not a relation of ${collection.name}.`)
    validateExpand(target, subtree, path)
  }
}

function relationTarget(collection: CollectionDef, key: string): CollectionDef | undefined {
  const field = findField(collection, key)
  if (field?.type === 'relation' && field.collection && !field.hidden)
    return findCollection(field.collection)
  const via = /^(\w+)_via_(\w+)$/.exec(key)
  if (!via) return undefined
  const target = findCollection(via[1])
  const backField = target && findField(target, via[2])
  return backField?.type === 'relation' && backField.collection === collection.name
    ? target
    : undefined
}

export async function expandRecords(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  items: RecordJson[],
  tree: ExpandTree,
): Promise<void> {
  if (items.length === 0) return
  for (const [key, subtree] of tree) {
    const resolved = await expandKey(database, caller, collection, items, key)
    if (!resolved) continue
    for (const item of items) item.expand ??= {}
    const related = [...new Set(resolved.values.flat())]
    if (subtree.size > 0) await expandRecords(database, caller, resolved.target, related, subtree)
    for (const item of items) {
      const value = resolved.byItem(item)
      if (value !== undefined) (item.expand as Record<string, unknown>)[key] = value
    }
  }
}

interface Resolved {
  target: CollectionDef
  values: RecordJson[][]
  byItem(item: RecordJson): RecordJson | RecordJson[] | undefined
}

async function expandKey(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  items: RecordJson[],
  key: string,
): Promise<Resolved | null> {
  const field = findField(collection, key)
  if (field?.type === 'relation' && field.collection) {
    const target = findCollection(field.collection)!
    const ids = [
      ...new Set(
        items.map((i) => i[key]).filter((v): v is string => typeof v === 'string' && v !== ''),
      ),
    ]
    const rows = await visibleOrNone(() =>
      fetchVisible(database, caller, target, ids, target.viewRule),
    )
    const byId = new Map(rows.map((row) => [row.id as string, toJson(target, caller, row)]))
    return {
      target,
      values: [[...byId.values()]],
      byItem: (item) => byId.get(item[key] as string),
    }
  }
  const via = /^(\w+)_via_(\w+)$/.exec(key)
  if (!via) return null
  const target = findCollection(via[1])
  const backField = target && findField(target, via[2])
  if (!target || backField?.type !== 'relation' || backField.collection !== collection.name)
    return null
  const ids = items.map((i) => i.id as string)
  let rows = await visibleOrNone(() =>
    fetchBackRelated(database, caller, target, backField.name, ids),
  )
  // A private (owner-only) relation field is a private link: a caller who may see the related
  // record but does not own it must not learn that it points here (which jobs ran on someone's
  // node, which request a job served). Filters already read such links as NULL for them.
  if (backField.private && !caller.superuser) rows = rows.filter(isOwned)
  const groups = new Map<string, RecordJson[]>()
  for (const row of rows) {
    const parent = row[backField.name] as string
    if (!groups.has(parent)) groups.set(parent, [])
    groups.get(parent)!.push(toJson(target, caller, row))
  }
  return {
    target,
    values: [...groups.values()],
    byItem: (item) => groups.get(item.id as string) ?? [],
  }
}

async function fetchBackRelated(
  database: Database,
  caller: Caller,
  target: CollectionDef,
  field: string,
  parentIds: string[],
): Promise<Row[]> {
  const query = sql<{ id: string }>`SELECT id FROM ${sql.table(target.name)}
    WHERE ${sql.ref(field)} IN (${sql.join(parentIds)}) LIMIT 1000`
  const ids = (await query.execute(database.db)).rows.map((r) => r.id)
  return fetchVisible(database, caller, target, ids, target.viewRule)
}

function isOwned(row: Row): boolean {
  return row.__owner === 1 || row.__owner === '1' || row.__owner === true
}

/** A locked (null) view rule hides the related records instead of failing the whole request. */
async function visibleOrNone(fetch: () => Promise<Row[]>): Promise<Row[]> {
  try {
    return await fetch()
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) return []
    throw err
  }
}
