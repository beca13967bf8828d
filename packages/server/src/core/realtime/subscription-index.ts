/**
 * @module One client's subscriptions on one collection, indexed so that an event only looks at
 * the subscriptions it could match: those on its record id, those whose filter requires one of
 * the record's field values (`conversation = "abc"`), and the rest (to be checked one by one).
 */
import type { Row } from '../records/serialize.ts'
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
