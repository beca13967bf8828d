/**
 * @module One client's subscriptions on one collection, indexed so that an event only looks at
 * the subscriptions it could match: those on its record id, those whose filter requires one of
 * the record's field values (`conversation = "abc"`), and the rest (to be checked one by one).
 */
import type { Row } from '../records/serialize.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import { findField } from '../collections/registry.ts'
import type { Caller } from '../records/caller.ts'
import type { Subscription } from './subscription.ts'

export class TopicIndex {
  private byId = new Map<string, Subscription[]>()
  /** field -> required value -> subscriptions */
  private byValue = new Map<string, Map<string, Subscription[]>>()
  private rest: Subscription[] = []

  add(sub: Subscription): void {
    if (sub.recordId !== '*') return push(this.byId, sub.recordId, sub)
    if (sub.equality) {
      let values = this.byValue.get(sub.equality.field)
      if (!values) this.byValue.set(sub.equality.field, (values = new Map()))
      return push(values, sub.equality.value, sub)
    }
    this.rest.push(sub)
  }

  /** The subscriptions this record could match. */
  candidates(row: Row): Subscription[] {
    const found = this.rest.slice()
    const byId = this.byId.get(String(row.id ?? ''))
    if (byId) found.push(...byId)
    for (const [field, values] of this.byValue) {
      const subs = values.get(String(row[field] ?? ''))
      if (subs) found.push(...subs)
    }
    return found
  }
}

function push(map: Map<string, Subscription[]>, key: string, sub: Subscription) {
  const list = map.get(key)
  if (list) list.push(sub)
  else map.set(key, [sub])
}

/**
 * The hub's index of clients per collection, so that an event only visits the clients that could
 * want it: those with a subscription on its record id or on one of its field values (a chat
 * screen's `conversation = "abc"`), and those with a subscription that must be checked anyway.
 * Without it every event visits every client of its collection: at a thousand chats streaming,
 * a million visits a second for nothing.
 */
export class ClientIndex<C> {
  private collections = new Map<string, CollectionClients<C>>()

  /** `key`: the field value every record the subscription can match has (none: no such value). */
  add(collection: string, client: C, key: IndexKey | undefined): void {
    let entry = this.collections.get(collection)
    if (!entry) this.collections.set(collection, (entry = { rest: new Set(), byField: new Map() }))
    if (!key) return void entry.rest.add(client)
    let values = entry.byField.get(key.field)
    if (!values) entry.byField.set(key.field, (values = new Map()))
    let clients = values.get(key.value)
    if (!clients) values.set(key.value, (clients = new Set()))
    clients.add(client)
  }

  remove(collection: string, client: C, key: IndexKey | undefined): void {
    const entry = this.collections.get(collection)
    if (!entry) return
    if (!key) entry.rest.delete(client)
    else {
      const values = entry.byField.get(key.field)
      const clients = values?.get(key.value)
      clients?.delete(client)
      if (clients && !clients.size) values!.delete(key.value)
      if (values && !values.size) entry.byField.delete(key.field)
    }
    if (!entry.rest.size && !entry.byField.size) this.collections.delete(collection)
  }

  /** Whether any client holds a subscription on the collection. */
  has(collection: string): boolean {
    return this.collections.has(collection)
  }

  /** The clients this record could concern, each once. */
  candidates(collection: string, row: Row): C[] {
    const entry = this.collections.get(collection)
    if (!entry) return []
    const found = [...entry.rest]
    let seen: Set<C> | null = null
    for (const [field, values] of entry.byField) {
      const clients = values.get(String(row[field] ?? ''))
      if (!clients) continue
      for (const client of clients) {
        if (entry.rest.has(client) || seen?.has(client)) continue
        found.push(client)
        ;(seen ??= new Set()).add(client)
      }
    }
    return found
  }
}

interface CollectionClients<C> {
  /** Clients with a subscription that no field value narrows. */
  rest: Set<C>
  /** field -> value -> clients with a subscription requiring it (`id` for record subscriptions) */
  byField: Map<string, Map<string, Set<C>>>
}

export interface IndexKey {
  field: string
  value: string
}

/**
 * The field value a subscription's records must have, for `caller`: its record id, its filter's
 * equality, or else its rule's when the rule is `field = @request.auth.id` (a user's own records)
 * and the caller is a signed-in non-superuser (a superuser skips rules; a guest is left to the
 * rule check).
 */
export function indexKey(sub: Subscription, caller: Caller): IndexKey | undefined {
  if (sub.recordId !== '*') return { field: 'id', value: sub.recordId }
  if (sub.equality) return sub.equality
  if (caller.superuser || !caller.auth) return undefined
  const field = ownRecordsField(sub.collection)
  return field ? { field, value: String(caller.auth.id) } : undefined
}

/** Field types whose stored value is the text an equality compares (as in subscription.ts). */
const indexable = new Set(['text', 'email', 'relation', 'select'])
const ownRule = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*@request\.auth\.id\s*$/
const ruleFields = new WeakMap<CollectionDef, string | null>()

/** The field of a list rule `field = @request.auth.id` (a text or single relation field). */
function ownRecordsField(collection: CollectionDef): string | null {
  let field = ruleFields.get(collection)
  if (field !== undefined) return field
  const name = ownRule.exec(collection.listRule ?? '')?.[1]
  const def = name && name !== 'id' ? findField(collection, name) : undefined
  field = name === 'id' ? 'id' : def && !def.hidden && indexable.has(def.type) ? name! : null
  ruleFields.set(collection, field)
  return field
}
