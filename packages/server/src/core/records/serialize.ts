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

/** Per collection, each output key in order with its field (null for the three that are not). */
const keyFields = new WeakMap<CollectionDef, Array<[string, FieldDef | null]>>()

function keysWithFields(collection: CollectionDef): Array<[string, FieldDef | null]> {
  let keys = keyFields.get(collection)
  if (!keys) {
    const types = fieldTypes(collection)
    const special = new Set(['collectionId', 'collectionName', 'id'])
    keys = keyOrder(collection).map((key) => [key, special.has(key) ? null : types.get(key)!])
    keyFields.set(collection, keys)
  }
  return keys
}

export function serializeRecord(
  collection: CollectionDef,
  row: Row,
  opts: SerializeOptions,
): RecordJson {
  const showPrivate = opts.owner || opts.superuser
  const out: RecordJson = {}
  for (const [key, field] of keysWithFields(collection)) {
    if (field) {
      if (field.private && !showPrivate) continue
      out[key] = decodeValue(field, row[key])
    } else if (key === 'collectionId') out.collectionId = collection.id
    else if (key === 'collectionName') out.collectionName = collection.name
    else out.id = row.id
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
