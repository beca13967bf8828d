/**
 * @module The realtime hub: connected clients, their subscriptions, and fan-out of record events
 * to every subscriber allowed to see them. Transport-free: the HTTP layer gives each client a
 * `send` function and feeds it subscription changes.
 */
import type { Database } from '../../db/database.ts'
import { ApiError } from '../../tools/api-error.ts'
import { randomString } from '../../tools/ids.ts'
import { parseFields, pickFields } from '../records/fields-picker.ts'
import { expandRecords, parseExpand } from '../records/expand.ts'
import type { Caller } from '../records/caller.ts'
import type { RecordAction } from '../records/record-events.ts'
import { serializeRecord, type Row } from '../records/serialize.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import { holds } from './access-check.ts'
import { parseSubscription, type Subscription } from './subscription.ts'

export interface RealtimeClient {
  id: string
  address: string
  caller: Caller | null
  subscriptions: Map<string, Subscription>
  send(event: string, data: string): void
}

export interface RealtimeEvent {
  action: RecordAction
  collection: CollectionDef
  row: Row
}

export class RealtimeHub {
  private clients = new Map<string, RealtimeClient>()

  constructor(private database: Database) {}

  get size(): number {
    return this.clients.size
  }

  connect(address: string, send: RealtimeClient['send']): RealtimeClient {
    const client: RealtimeClient = { id: randomString(40), address, caller: null, subscriptions: new Map(), send }
    this.clients.set(client.id, client)
    return client
  }

  disconnect(id: string): void {
    this.clients.delete(id)
  }

  /** Replaces a client's whole subscription set (POST /api/realtime). */
  setSubscriptions(clientId: string, caller: Caller, address: string, keys: string[]): void {
    const client = this.clients.get(clientId)
    if (!client) throw new ApiError(404, 'Missing or invalid client id.')
    if (client.address !== address) throw new ApiError(400, 'Invalid realtime client.')
    const before = client.caller?.auth?.id
    // A guest may sign in on an open stream; any other change of identity is refused.
    if (client.caller && before && before !== caller.auth?.id) {
      throw new ApiError(403, "The current and the previous request authorization don't match.")
    }
    client.caller = caller
    client.subscriptions.clear()
    for (const key of keys) {
      if (!key) continue
      const sub = parseSubscription(key)
      if (sub) client.subscriptions.set(key, sub)
    }
  }

  /** Delivers one record event to every matching, permitted subscription. */
  async publish(event: RealtimeEvent): Promise<void> {
    const id = event.row.id as string
    const cache = new Map<string, Promise<boolean>>()
    const payloads = new Map<string, Promise<string>>()
    const tasks: Promise<void>[] = []
    for (const client of this.clients.values()) {
      const caller = client.caller
      if (!caller) continue
      for (const sub of client.subscriptions.values()) {
        if (sub.collection.name !== event.collection.name) continue
        if (sub.recordId !== '*' && sub.recordId !== id) continue
        tasks.push(this.deliver(client, caller, sub, event, cache, payloads))
      }
    }
    await Promise.all(tasks)
  }

  private async deliver(
    client: RealtimeClient,
    caller: Caller,
    sub: Subscription,
    event: RealtimeEvent,
    cache: Map<string, Promise<boolean>>,
    payloads: Map<string, Promise<string>>,
  ): Promise<void> {
    const collection = event.collection
    const rule = sub.recordId === '*' ? collection.listRule : collection.viewRule
    if (rule === null && !caller.superuser) return
    const check = (expr: string, client: boolean) => {
      const key = `${caller.auth?.id ?? ''}\u0000${client}\u0000${expr}`
      let result = cache.get(key)
      if (!result) cache.set(key, (result = holds(this.database, caller, collection, expr, event.row, client)))
      return result
    }
    try {
      if (rule && !caller.superuser && !(await check(rule, false))) return
      if (sub.filter && !(await check(sub.filter, !caller.superuser))) return
      const owner = caller.superuser || !collection.ownerRule || (await check(collection.ownerRule, false))
      const self = collection.type === 'auth' && caller.auth?.id === event.row.id
      // Subscribers who see the record the same way share one serialised payload.
      const variant = sub.expand
        ? `${caller.auth?.id}\u0000${sub.expand}\u0000${sub.fields ?? ''}`
        : `${owner}\u0000${self}\u0000${caller.superuser}\u0000${sub.fields ?? ''}`
      let payload = payloads.get(variant)
      if (!payload) {
        payload = this.payload(caller, sub, event, owner, self)
        payloads.set(variant, payload)
      }
      client.send(sub.key, await payload)
    } catch {
      // One subscriber's failing check must not stop delivery to the others.
    }
  }

  private async payload(caller: Caller, sub: Subscription, event: RealtimeEvent, owner: boolean, self: boolean) {
    const collection = event.collection
    let record: Record<string, unknown> = serializeRecord(collection, event.row, { owner, self, superuser: caller.superuser })
    if (sub.expand && event.action !== 'delete') {
      await expandRecords(this.database, caller, collection, [record], parseExpand(sub.expand))
    }
    if (sub.fields) {
      const pick = parseFields(sub.fields)
      if (pick) record = pickFields(record, pick) as Record<string, unknown>
    }
    return JSON.stringify({ action: event.action, record })
  }
}
