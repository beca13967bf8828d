/**
 * @module A realtime subscription key as the SDK sends it: `collection/*` or `collection/id`,
 * optionally followed by `?options=<json {query:{filter, expand, fields}, headers}>`. The key is
 * kept verbatim: it is also the SSE event name the SDK listens on. The filter is parsed once,
 * when the subscription is set, and an equality on one of the record's own fields
 * (`conversation = "abc"`) is picked out so events can find the subscription by that value.
 */
import { findCollection, findField } from '../collections/registry.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import { FilterError } from '../../tools/filter/filter-error.ts'
import { FieldsError, parseFields } from '../records/fields-picker.ts'
import { parseFilter, type FilterExpr, type Operand } from '../../tools/filter/parser.ts'

export interface Subscription {
  key: string
  collection: CollectionDef
  /** '*' for the whole collection, else one record id. */
  recordId: string
  filter?: string
  /** The parsed filter; null when it cannot match (unparsable, forbidden to the caller, or beside
   * a malformed `fields` option). */
  expr?: FilterExpr | null
  /** A conjunct `field = "text"`: only records with that value can match. */
  equality?: { field: string; value: string }
  expand?: string
  fields?: string
}

export function parseSubscription(key: string): Subscription | null {
  const [topic, query = ''] = splitOnce(key, '?')
  const slash = topic.indexOf('/')
  const name = slash === -1 ? topic : topic.slice(0, slash)
  const recordId = slash === -1 ? '*' : topic.slice(slash + 1)
  const collection = findCollection(name)
  if (!collection || !recordId) return null
  const sub: Subscription = { key, collection, recordId }
  const options = new URLSearchParams(query).get('options')
  if (options) {
    try {
      const parsed = JSON.parse(options) as { query?: Record<string, unknown> }
      const q = parsed.query ?? {}
      if (q.filter !== undefined) sub.filter = String(q.filter)
      if (q.expand !== undefined) sub.expand = String(q.expand)
      if (q.fields !== undefined) sub.fields = String(q.fields)
    } catch {
      // PocketBase ignores unreadable options; the subscription still works without them.
    }
  }
  if (sub.filter?.trim()) compileFilter(sub)
  // A `fields` option that cannot be applied would throw while the event is being delivered to
  // everyone: such a subscription never matches instead, like an unparsable filter.
  if (sub.fields !== undefined && !fieldsParse(sub.fields)) sub.expr = null
  return sub
}

function fieldsParse(fields: string): boolean {
  try {
    parseFields(fields)
    return true
  } catch (err) {
    if (err instanceof FieldsError) return false
    throw err
  }
}

/** Parses the filter once; a filter that cannot parse never matches (PocketBase sends nothing). */
function compileFilter(sub: Subscription) {
  try {
    sub.expr = parseFilter(sub.filter!)
  } catch (err) {
    if (!(err instanceof FilterError)) throw err
    sub.expr = null
    return
  }
  sub.equality = findEquality(sub.collection, sub.expr)
}

/** Field types whose stored value is the text an equality compares (ids, relations, text). */
const indexable = new Set(['text', 'email', 'relation', 'select'])

function findEquality(collection: CollectionDef, expr: FilterExpr): Subscription['equality'] {
  const items = expr.type === 'and' ? expr.items : expr.type === 'compare' ? [expr] : []
  for (const item of items) {
    if (item.type !== 'compare' || item.op !== '=') continue
    const pair =
      fieldAndText(collection, item.left, item.right) ??
      fieldAndText(collection, item.right, item.left)
    if (pair) return pair
  }
  return undefined
}

function fieldAndText(collection: CollectionDef, a: Operand, b: Operand): Subscription['equality'] {
  if (a.kind !== 'identifier' || b.kind !== 'text' || a.modifier || a.path.length !== 1)
    return undefined
  const name = a.path[0]
  if (name === 'id') return { field: 'id', value: b.value }
  const field = findField(collection, name)
  if (!field || field.hidden || !indexable.has(field.type)) return undefined
  return { field: name, value: b.value }
}

function splitOnce(text: string, sep: string): [string, string?] {
  const i = text.indexOf(sep)
  return i === -1 ? [text] : [text.slice(0, i), text.slice(i + 1)]
}
