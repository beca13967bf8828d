/**
 * @module The realtime hub of one process: its connected clients, their subscriptions (indexed by
 * collection, record and required field values), and the fan-out of record events to every
 * subscriber allowed to see them. Transport-free: the HTTP layer gives each client a `send`
 * function taking framed bytes. Clients with the same caller and the same subscriptions on a
 * collection share one view of it: an event is matched, checked and serialised once per view,
 * and each member stream gets the view's bytes, so per-stream work is appending a Buffer. What
 * matches from memory is sent at once; what needs the database (relation paths, expand) waits in
 * each client's own queue, in order. Matching work is charged to the view owner's cost budget
 * once per view, so one user's thousands of filters cannot delay anyone else's events.
 */
import type { Database } from '../../db/database.ts'
import { guest, type Caller } from '../records/caller.ts'
import type { Row } from '../records/serialize.ts'
import { randomString } from '../../tools/ids.ts'
import { CostBudget, defaultCostBudget, type CostBudgetOptions } from './cost-budget.ts'
import {
  EventMatch,
  type CheckCounts,
  type QuickVerdict,
  type RealtimeEvent,
  type Tally,
} from './event-match.ts'
import { parseSubscription, type Subscription } from './subscription.ts'
import { ClientIndex, TopicIndex, indexKey, type IndexKey } from './subscription-index.ts'

export type { RealtimeEvent } from './event-match.ts'

export interface RealtimeClient {
  id: string
  address: string
  caller: Caller | null
  subscriptions: Map<string, Subscription>
  /** Writes SSE messages framed by `frame` (without the `id:` line, which the transport adds). */
  send(frames: readonly Buffer[]): void
}

/** One SSE message without its id line: `event:<name>\ndata:<data>\n\n`. */
export function frame(event: string, data: string): Buffer {
  return Buffer.from(`event:${event}\ndata:${data}\n\n`)
}

/** The clients with one caller and one set of subscriptions on one collection. */
interface View {
  key: string
  collection: string
  caller: Caller
  /** Whose budget the view's matching uses. */
  owner: string
  topic: TopicIndex
  /** Where the hub's index holds this view (to take it out again). */
  indexed: Array<IndexKey | undefined>
  members: Set<Connected>
}

interface Connected extends RealtimeClient {
  views: View[]
  /** Deliveries waiting for the database, run one after another to keep the client's order. */
  chain: Promise<void>
  backlog: number
  closed: boolean
}

export interface HubOptions {
  budget?: CostBudgetOptions
  /** What one database query counts as against the budget (its CPU is the database's). */
  queryCostMs?: number
  /** Events one client may have waiting for the database before later ones are dropped. */
  maxBacklog?: number
}

export class RealtimeHub {
  private clients = new Map<string, Connected>()
  private views = new Map<string, View>()
  private index = new ClientIndex<View>()
  private budget: CostBudget
  private queryCostMs: number
  private maxBacklog: number
  /** Events not delivered because their subscriber was over its budget or backlog. */
  dropped = 0
  /** Rule and filter checks made, in memory and in the database. */
  readonly checks: CheckCounts = { memory: 0, database: 0 }

  constructor(
    private database: Database,
    options: HubOptions = {},
  ) {
    this.budget = new CostBudget(options.budget ?? defaultCostBudget)
    this.queryCostMs = options.queryCostMs ?? 1
    this.maxBacklog = options.maxBacklog ?? 100
  }

  get size(): number {
    return this.clients.size
  }

  get(id: string): RealtimeClient | undefined {
    return this.clients.get(id)
  }

  all(): Iterable<RealtimeClient> {
    return this.clients.values()
  }

  connect(address: string, send: RealtimeClient['send']): RealtimeClient {
    const client: Connected = {
      id: randomString(40),
      address,
      caller: null,
      subscriptions: new Map(),
      send,
      views: [],
      chain: Promise.resolve(),
      backlog: 0,
      closed: false,
    }
    this.clients.set(client.id, client)
    return client
  }

  disconnect(id: string): void {
    const client = this.clients.get(id)
    if (!client) return
    client.closed = true
    this.leaveViews(client)
    this.clients.delete(id)
  }

  /** Replaces a client's whole subscription set and the caller it was set by (checked before). */
  setSubscriptions(id: string, caller: Caller, keys: string[]): void {
    const client = this.clients.get(id)
    if (!client) return
    this.leaveViews(client)
    client.caller = caller
    client.subscriptions.clear()
    const byCollection = new Map<string, Subscription[]>()
    for (const key of keys) {
      // A name with a line break could not be an SSE event name: such a key never gets events.
      if (!key || client.subscriptions.has(key) || /[\r\n]/.test(key)) continue
      const sub = parseSubscription(key)
      if (!sub) continue
      client.subscriptions.set(key, sub)
      const list = byCollection.get(sub.collection.name)
      if (list) list.push(sub)
      else byCollection.set(sub.collection.name, [sub])
    }
    const owner = ownerOf(client)
    for (const [collection, subs] of byCollection) {
      const key = [owner, callerKey(caller), collection, ...subs.map((s) => s.key).sort()].join(
        '\u0000',
      )
      let view = this.views.get(key)
      if (!view) {
        view = {
          key,
          collection,
          caller,
          owner,
          topic: new TopicIndex(),
          indexed: [],
          members: new Set(),
        }
        for (const sub of subs) {
          view.topic.add(sub)
          const where = indexKey(sub, caller)
          this.index.add(collection, view, where)
          view.indexed.push(where)
        }
        this.views.set(key, view)
      }
      view.members.add(client)
      client.views.push(view)
    }
  }

  /**
   * A user's row changed or went: streams signed in as them with a token it no longer accepts (a
   * password change gave it a new token key, or the account was deleted: `tokenKey` null) go on
   * with the same subscriptions as a guest's, as their token would on any other request.
   */
  revoke(userId: string, tokenKey: unknown): void {
    for (const client of this.clients.values()) {
      const auth = client.caller?.auth
      if (!auth || auth.id !== userId || (tokenKey !== null && auth.tokenKey === tokenKey)) continue
      this.setSubscriptions(client.id, guest, [...client.subscriptions.keys()])
    }
  }

  /** Delivers one record event to every matching, permitted subscription. */
  publish(event: RealtimeEvent): Promise<void> {
    if (!this.index.has(event.collection.name)) return Promise.resolve()
    const views = this.index.candidates(event.collection.name, event.row)
    const match = new EventMatch(this.database, event, this.checks)
    /** Framed messages of this event, shared by views that send the same name and data. */
    const framed = new Map<string, Map<string, Buffer>>()
    const waiting: Promise<void>[] = []
    for (const view of views) {
      const candidates = view.topic.candidates(event.row)
      if (!candidates.length) continue
      if (!this.budget.allows(view.owner)) {
        this.dropped += view.members.size
        continue
      }
      const { caller, owner } = view
      const started = performance.now()
      let verdicts: QuickVerdict[]
      let frames: Buffer[] | null = null
      try {
        verdicts = candidates.map((sub) => match.quick(caller, sub))
        if (!verdicts.includes('later')) {
          frames = []
          const tally = { queries: 0 }
          for (let i = 0; i < candidates.length; i++) {
            if (verdicts[i] !== 'yes') continue
            const sub = candidates[i]
            const data = match.payload(caller, sub, tally) as string
            let byName = framed.get(data)
            if (!byName) framed.set(data, (byName = new Map()))
            let bytes = byName.get(sub.key)
            if (!bytes) byName.set(sub.key, (bytes = frame(sub.key, data)))
            frames.push(bytes)
          }
        }
      } catch {
        // As in `later`: one view's failing check or payload must not stop the other views.
        this.dropped += view.members.size
        continue
      } finally {
        this.budget.charge(owner, performance.now() - started)
      }
      // Per member stream: append the view's bytes (or queue behind its database work).
      for (const client of view.members) {
        if (client.backlog >= this.maxBacklog) {
          this.dropped++
        } else if (frames && client.backlog === 0) {
          if (frames.length) client.send(frames)
        } else {
          waiting.push(this.later(client, caller, candidates, verdicts, match, owner))
        }
      }
    }
    return waiting.length ? Promise.all(waiting).then(() => undefined) : Promise.resolve()
  }

  /** The database part of one event for one client, queued behind its earlier events. */
  private later(
    client: Connected,
    caller: Caller,
    subs: Subscription[],
    verdicts: QuickVerdict[],
    match: EventMatch,
    owner: string,
  ): Promise<void> {
    client.backlog++
    const run = async () => {
      for (let i = 0; i < subs.length && !client.closed; i++) {
        if (verdicts[i] === 'no') continue
        if (!this.budget.allows(owner)) {
          this.dropped++
          return
        }
        const tally: Tally = { queries: 0 }
        try {
          if (verdicts[i] === 'later' && !(await match.matches(caller, subs[i], tally))) continue
          const payload = await match.payload(caller, subs[i], tally)
          if (!client.closed) client.send([frame(subs[i].key, payload)])
        } catch {
          // One subscriber's failing check must not stop delivery to the others.
        } finally {
          // Time spent waiting for the database is not this process's CPU: its queries count.
          this.budget.charge(owner, tally.queries * this.queryCostMs)
        }
      }
    }
    client.chain = client.chain
      .then(run)
      .catch(() => {})
      .finally(() => client.backlog--)
    return client.chain
  }

  private leaveViews(client: Connected) {
    for (const view of client.views) {
      view.members.delete(client)
      if (view.members.size) continue
      for (const where of view.indexed) this.index.remove(view.collection, view, where)
      this.views.delete(view.key)
    }
    client.views = []
  }
}

/** Whose budget a client's deliveries use: its user's, or for a guest its address's. */
function ownerOf(client: RealtimeClient): string {
  return client.caller?.auth ? `u:${client.caller.auth.id}` : `a:${client.address}`
}

const authSerials = new WeakMap<Row, number>()
let lastSerial = 0

/**
 * Who a caller is, for sharing a view: a guest, or one signed-in record (a user's or a
 * superuser's) as read when the subscription was set: the same row object, so that rules and
 * the payload (a user's own record shows more) see exactly the member's own caller.
 */
function callerKey(caller: Caller): string {
  const kind = caller.superuser ? 's' : 'u'
  if (!caller.auth) return kind
  let serial = authSerials.get(caller.auth)
  if (serial === undefined) authSerials.set(caller.auth, (serial = ++lastSerial))
  return `${kind}:${String(caller.auth.id)}#${serial}`
}
