/**
 * @module The realtime hub of one process: its connected clients, their subscriptions (indexed by
 * collection, record and required field values), and the fan-out of record events to every
 * subscriber allowed to see them. Transport-free: the HTTP layer gives each client a `send`
 * function. What matches from memory is sent at once; what needs the database (relation paths,
 * expand) waits in the client's own queue, in order. All of a subscriber owner's work is charged
 * to its cost budget, so one user's thousands of filters cannot delay anyone else's events.
 */
import type { Database } from '../../db/database.ts'
import type { Caller } from '../records/caller.ts'
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
  send(event: string, data: string): void
}

interface Connected extends RealtimeClient {
  topics: Map<string, TopicIndex>
  /** Where the hub's index holds this client (to take it out again). */
  indexed: Array<{ collection: string; key: IndexKey | undefined }>
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
  private index = new ClientIndex<Connected>()
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
      topics: new Map(),
      indexed: [],
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
    this.unindex(client)
    this.clients.delete(id)
  }

  /** Replaces a client's whole subscription set and the caller it was set by (checked before). */
  setSubscriptions(id: string, caller: Caller, keys: string[]): void {
    const client = this.clients.get(id)
    if (!client) return
    this.unindex(client)
    client.caller = caller
    client.subscriptions.clear()
    for (const key of keys) {
      if (!key || client.subscriptions.has(key)) continue
      const sub = parseSubscription(key)
      if (!sub) continue
      client.subscriptions.set(key, sub)
      let topic = client.topics.get(sub.collection.name)
      if (!topic) client.topics.set(sub.collection.name, (topic = new TopicIndex()))
      topic.add(sub)
      const where = { collection: sub.collection.name, key: indexKey(sub, caller) }
      this.index.add(where.collection, client, where.key)
      client.indexed.push(where)
    }
  }

  /** Delivers one record event to every matching, permitted subscription. */
  publish(event: RealtimeEvent): Promise<void> {
    if (!this.index.has(event.collection.name)) return Promise.resolve()
    const clients = this.index.candidates(event.collection.name, event.row)
    const match = new EventMatch(this.database, event, this.checks)
    const waiting: Promise<void>[] = []
    for (const client of clients) {
      const caller = client.caller
      const candidates = caller && client.topics.get(event.collection.name)?.candidates(event.row)
      if (!caller || !candidates?.length) continue
      const owner = ownerOf(client)
      if (!this.budget.allows(owner) || client.backlog >= this.maxBacklog) {
        this.dropped++
        continue
      }
      const started = performance.now()
      const verdicts = candidates.map((sub) => match.quick(caller, sub))
      if (client.backlog === 0 && !verdicts.includes('later')) {
        const tally = { queries: 0 }
        candidates.forEach((sub, i) => {
          if (verdicts[i] === 'yes')
            client.send(sub.key, match.payload(caller, sub, tally) as string)
        })
      } else {
        waiting.push(this.later(client, caller, candidates, verdicts, match, owner))
      }
      this.budget.charge(owner, performance.now() - started)
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
          if (!client.closed) client.send(subs[i].key, payload)
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

  private unindex(client: Connected) {
    for (const { collection, key } of client.indexed) this.index.remove(collection, client, key)
    client.indexed = []
    client.topics.clear()
  }
}

/** Whose budget a client's deliveries use: its user's, or for a guest its address's. */
function ownerOf(client: RealtimeClient): string {
  return client.caller?.auth ? `u:${client.caller.auth.id}` : `a:${client.address}`
}
