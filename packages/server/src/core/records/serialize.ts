/**
 * @module Turns a stored row into PocketBase's record JSON: typed values, hidden fields dropped,
 * private fields only for owners, e-mails only for their owner, keys in alphabetical order.
 */
import type { CollectionDef, FieldDef } from '../collections/collection-def.ts'

export type Row = Record<string, unknown>
export type RecordJson = Record<string, unknown>

export interface SerializeOptions {
  /** The caller owns the row (collection ownerRule held), so private fields are shown. */
  owner: boolean
  /** The caller is the auth record itself (users collection), or a superuser. */
  self: boolean
  superuser: boolean
}

/** Per collection, the output keys in alphabetical order (as PocketBase's Go maps come out). */
const keyOrders = new WeakMap<CollectionDef, string[]>()

function keyOrder(collection: CollectionDef): string[] {
  let order = keyOrders.get(collection)
  if (!order) {
    const fields = collection.fields.filter((f) => !f.hidden).map((f) => f.name)
    order = ['collectionId', 'collectionName', 'id', ...fields].sort()
    keyOrders.set(collection, order)
  }
  return order
}

export function serializeRecord(
  collection: CollectionDef,
  row: Row,
  opts: SerializeOptions,
): RecordJson {
  const types = fieldTypes(collection)
  const out: RecordJson = {}
  for (const key of keyOrder(collection)) {
    if (key === 'collectionId') out.collectionId = collection.id
    else if (key === 'collectionName') out.collectionName = collection.name
    else if (key === 'id') out.id = row.id
    else {
      const field = types.get(key)!
      if (field.private && !opts.owner && !opts.superuser) continue
      out[key] = decodeValue(field, row[key])
    }
  }
  if (collection.type === 'auth') {
    const visible = opts.self || opts.superuser || out.emailVisibility === true
    if (!visible) delete out.email
  }
  return out
}

const fieldMaps = new WeakMap<CollectionDef, Map<string, CollectionDef['fields'][number]>>()

function fieldTypes(collection: CollectionDef) {
  let map = fieldMaps.get(collection)
  if (!map) {
    map = new Map(collection.fields.map((f) => [f.name, f]))
    fieldMaps.set(collection, map)
  }
  return map
}

export function decodeValue(field: FieldDef, value: unknown): unknown {
  switch (field.type) {
    case 'bool':
      return value === 1 || value === true || value === '1'
    case 'number': {
      const n = value === null || value === undefined ? 0 : Number(value)
      return field.scale ? n / field.scale : n
    }
    case 'json':
      if (typeof value !== 'string' || value === '') return null
      try {
        return JSON.parse(value)
      } catch {
        return null
      }
    default:
      return value === null || value === undefined ? '' : value
  }
}
