/**
 * @module One record event matched against subscriptions: the subscription's rule (list rule for
 * `coll/*`, view rule for `coll/id`), its filter, and the payload the subscriber gets. Checks are
 * shared per caller within the event (a rule is evaluated once per user, not per subscription).
 * The quick pass answers from memory; what needs the database (relation paths, expand) is left
 * for the slow pass, which the hub runs in order per client and charges to its owner.
 */
import type { Database } from '../../db/database.ts'
import type { FilterExpr } from '../../tools/filter/parser.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import { expandRecords, parseExpand } from '../records/expand.ts'
import { parseFields, pickFields } from '../records/fields-picker.ts'
import type { Caller } from '../records/caller.ts'
import type { RecordAction } from '../records/record-events.ts'
import { serializeRecord, type Row } from '../records/serialize.ts'
import { holdsInDatabase, holdsInMemory } from './access-check.ts'
import type { Subscription } from './subscription.ts'

export interface RealtimeEvent {
  action: RecordAction
  collection: CollectionDef
  row: Row
}

/** An expression to hold; `text` is its source (the cache key), `expr` null when it cannot match. */
interface Check {
  expr: string | FilterExpr | null
  text: string
  client: boolean
}

/** Database queries one subscriber's checks started (its cost beyond the CPU measured). */
export interface Tally {
  queries: number
}

/** Checks made, over the process's life (metrics, and tests that count work). */
export interface CheckCounts {
  memory: number
  database: number
}

export type QuickVerdict = 'yes' | 'no' | 'later'

export class EventMatch {
  private memory = new Map<string, boolean | undefined>()
  private asked = new Map<string, Promise<boolean>>()
  private payloads = new Map<string, string | Promise<string>>()

  constructor(
    private database: Database,
    readonly event: RealtimeEvent,
    private counts: CheckCounts,
  ) {}

  /** From memory only: 'later' when the database must answer or the payload needs it. */
  quick(caller: Caller, sub: Subscription): QuickVerdict {
    const rule = this.rule(sub)
    if (rule === null && !caller.superuser) return 'no'
    let later = false
    for (const { expr, text, client } of this.checks(caller, sub, rule)) {
      if (expr === null) return 'no'
      const verdict = this.inMemory(caller, expr, text, client)
      if (verdict === false) return 'no'
      if (verdict === undefined) later = true
    }
    if (later || sub.expand) return 'later'
    return this.ownerInMemory(caller) === undefined ? 'later' : 'yes'
  }

  /** The whole check, asking the database where memory cannot tell. */
  async matches(caller: Caller, sub: Subscription, tally: Tally): Promise<boolean> {
    const rule = this.rule(sub)
    if (rule === null && !caller.superuser) return false
    for (const { expr, text, client } of this.checks(caller, sub, rule)) {
      if (expr === null || !(await this.check(caller, expr, text, client, tally))) return false
    }
    return true
  }

  /** The event's data for this subscriber (call after a match). */
  payload(caller: Caller, sub: Subscription, tally: Tally): string | Promise<string> {
    const collection = this.event.collection
    const self = collection.type === 'auth' && caller.auth?.id === this.event.row.id
    const owner = this.ownerInMemory(caller)
    if (owner === undefined || sub.expand) {
      return (async () => this.build(caller, sub, await this.owner(caller, tally), self, tally))()
    }
    return this.build(caller, sub, owner, self, tally)
  }

  private build(
    caller: Caller,
    sub: Subscription,
    owner: boolean,
    self: boolean,
    tally: Tally,
  ): string | Promise<string> {
    // Subscribers who see the record the same way share one serialised payload.
    const variant = sub.expand
      ? `${caller.auth?.id}\u0000${sub.expand}\u0000${sub.fields ?? ''}`
      : `${owner}\u0000${self}\u0000${caller.superuser}\u0000${sub.fields ?? ''}`
    let payload = this.payloads.get(variant)
    if (payload === undefined) {
      payload = sub.expand
        ? this.expanded(caller, sub, owner, self, tally)
        : this.serialize(caller, sub, owner, self, null)
      this.payloads.set(variant, payload)
    }
    return payload
  }

  private async expanded(
    caller: Caller,
    sub: Subscription,
    owner: boolean,
    self: boolean,
    tally: Tally,
  ): Promise<string> {
    const { collection, action } = this.event
    const record = serializeRecord(collection, this.event.row, {
      owner,
      self,
      superuser: caller.superuser,
    })
    if (action !== 'delete') {
      tally.queries++
      await expandRecords(this.database, caller, collection, [record], parseExpand(sub.expand!))
    }
    return this.serialize(caller, sub, owner, self, record)
  }

  private serialize(
    caller: Caller,
    sub: Subscription,
    owner: boolean,
    self: boolean,
    base: Record<string, unknown> | null,
  ) {
    const { collection, action, row } = this.event
    let record: Record<string, unknown> =
      base ?? serializeRecord(collection, row, { owner, self, superuser: caller.superuser })
    if (sub.fields) {
      const pick = parseFields(sub.fields)
      if (pick) record = pickFields(record, pick) as Record<string, unknown>
    }
    return JSON.stringify({ action, record })
  }

  private rule(sub: Subscription) {
    const collection = this.event.collection
    return sub.recordId === '*' ? collection.listRule : collection.viewRule
  }

  /** The expressions a subscription needs to hold: the rule (server's) and the filter (client's). */
  private checks(caller: Caller, sub: Subscription, rule: string | null): Check[] {
    const list: Check[] = []
    if (rule && !caller.superuser) list.push({ expr: rule, text: rule, client: false })
    if (sub.expr !== undefined)
      list.push({ expr: sub.expr, text: sub.filter!, client: !caller.superuser })
    return list
  }

  private ownerInMemory(caller: Caller): boolean | undefined {
    const ownerRule = this.event.collection.ownerRule
    if (caller.superuser || !ownerRule) return true
    return this.inMemory(caller, ownerRule, ownerRule, false)
  }

  private async owner(caller: Caller, tally: Tally): Promise<boolean> {
    const ownerRule = this.event.collection.ownerRule
    if (caller.superuser || !ownerRule) return true
    return this.check(caller, ownerRule, ownerRule, false, tally)
  }

  private inMemory(
    caller: Caller,
    expr: string | FilterExpr,
    text: string,
    client: boolean,
  ): boolean | undefined {
    const key = this.key(caller, text, client)
    if (this.memory.has(key)) return this.memory.get(key)
    const { collection, row } = this.event
    this.counts.memory++
    const verdict = holdsInMemory(this.database, caller, collection, expr, row, client)
    this.memory.set(key, verdict)
    return verdict
  }

  private check(
    caller: Caller,
    expr: string | FilterExpr,
    text: string,
    client: boolean,
    tally: Tally,
  ): Promise<boolean> | boolean {
    const quick = this.inMemory(caller, expr, text, client)
    if (quick !== undefined) return quick
    const key = this.key(caller, text, client)
    let verdict = this.asked.get(key)
    if (!verdict) {
      tally.queries++
      this.counts.database++
      const { collection, row } = this.event
      verdict = holdsInDatabase(this.database, caller, collection, expr, row, client)
      this.asked.set(key, verdict)
    }
    return verdict
  }

  private key(caller: Caller, text: string, client: boolean): string {
    const who = caller.superuser ? '\u0001' : String(caller.auth?.id ?? '')
    return `${who}\u0000${client}\u0000${text}`
  }
}
