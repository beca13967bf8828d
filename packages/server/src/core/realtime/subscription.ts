/**
 * @module A realtime subscription key as the SDK sends it: `collection/*` or `collection/id`,
 * optionally followed by `?options=<json {query:{filter, expand, fields}, headers}>`. The key is
 * kept verbatim: it is also the SSE event name the SDK listens on.
 */
import { findCollection } from '../collections/registry.ts'
import type { CollectionDef } from '../collections/collection-def.ts'

export interface Subscription {
  key: string
  collection: CollectionDef
  /** '*' for the whole collection, else one record id. */
  recordId: string
  filter?: string
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
  return sub
}

function splitOnce(text: string, sep: string): [string, string?] {
  const i = text.indexOf(sep)
  return i === -1 ? [text] : [text.slice(0, i), text.slice(i + 1)]
}
