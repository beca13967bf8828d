/**
 * @module Schema lookups for identifier paths: back-relations (`<collection>_via_<field>`), the
 * relation depth limit, and a bounded cache of parsed rule texts (rules are compiled per request).
 */
import type { CollectionDef, FieldDef } from '../collections/collection-def.ts'
import { findCollection, findField } from '../collections/registry.ts'
import { parseFilter, type FilterExpr } from '../../tools/filter/parser.ts'

export const maxRelationDepth = 6

export interface BackRelation {
  collection: CollectionDef
  field: FieldDef
}

/** `requests_via_user` from users: the requests whose `user` points at the current record. */
export function findBackRelation(segment: string, from: CollectionDef): BackRelation | undefined {
  const match = /^(.+)_via_(.+)$/.exec(segment)
  if (!match) return undefined
  const collection = findCollection(match[1])
  if (!collection || collection.name !== match[1]) return undefined
  const field = findField(collection, match[2])
  if (!field || field.type !== 'relation' || field.collection !== from.name) return undefined
  return { collection, field }
}

export function relationTarget(field: FieldDef): CollectionDef | undefined {
  return field.collection ? findCollection(field.collection) : undefined
}

const cacheLimit = 500
const parsed = new Map<string, FilterExpr>()

/** parseFilter with a small cache; errors are not cached (they are cheap to reproduce). */
export function parseCached(text: string): FilterExpr {
  const hit = parsed.get(text)
  if (hit) return hit
  const expr = parseFilter(text)
  if (parsed.size >= cacheLimit) parsed.delete(parsed.keys().next().value as string)
  parsed.set(text, expr)
  return expr
}
