/**
 * @module Turns a stored row into PocketBase's record JSON: typed values, hidden fields dropped,
 * private fields only for owners, e-mails only for their owner, keys in alphabetical order.
 */
import type { CollectionDef } from '../collections/collection-def.ts'

export type Row = Record<string, unknown>
export type RecordJson = Record<string, unknown>

export interface SerializeOptions {
  /** The caller owns the row (collection ownerRule held), so private fields are shown. */
  owner: boolean
  /** The caller is the auth record itself (users collection), or a superuser. */
  self: boolean
  superuser: boolean
}

export function serializeRecord(collection: CollectionDef, row: Row, opts: SerializeOptions): RecordJson {
  const out: RecordJson = {
    collectionId: collection.id,
    collectionName: collection.name,
    id: row.id,
  }
  for (const field of collection.fields) {
    if (field.hidden) continue
    if (field.private && !opts.owner && !opts.superuser) continue
    out[field.name] = decodeValue(field.type, row[field.name])
  }
  if (collection.type === 'auth') {
    const visible = opts.self || opts.superuser || out.emailVisibility === true
    if (!visible) delete out.email
  }
  return sortKeys(out)
}

export function decodeValue(type: string, value: unknown): unknown {
  switch (type) {
    case 'bool':
      return value === 1 || value === true || value === '1'
    case 'number':
      return value === null || value === undefined ? 0 : Number(value)
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

export function sortKeys(obj: RecordJson): RecordJson {
  const sorted: RecordJson = {}
  for (const key of Object.keys(obj).sort()) sorted[key] = obj[key]
  return sorted
}
