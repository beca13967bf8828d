/**
 * @module The nodes serving each model, held in memory between scheduler passes. Reading them is
 * one join per model (pick-node.ts), but its cost grows with the nodes that serve the model: with
 * 300 it took 0.6-0.8 ms, on every send. So each model's nodes are read once, kept up to date
 * from the record events of every process (scaled out, the bus's `records` channel): a node's
 * reputation, verification, benching, status, a model served or no longer served. They are read
 * again after `ttlMs` in any case, for writes made outside the coordinator (an operator's SQL).
 */
import type { Db } from '../../db/database.ts'
import { nowDate } from '../../tools/dates.ts'
import type { Bus } from '../../tools/bus/bus.ts'
import type { RecordBusMessage, RecordEvents } from '../records/record-events.ts'
import type { Row } from '../records/serialize.ts'
import type { CandidateRow } from './pick-node.ts'

export const CANDIDATES_TTL_MS = 2_000

/** A node serving the model, with what decides whether it may take work now. */
interface HeldNode extends Omit<CandidateRow, 'storedOnline'> {
  active: boolean
  benchedUntil: string
  status: string
}

interface Entry {
  nodes: Map<string, HeldNode>
  until: number
}

interface Loading {
  rows: Promise<Map<string, HeldNode>>
  /** A change arrived while it read: its result answers its callers but is not kept. */
  stale: boolean
}

export class CandidateCache {
  private entries = new Map<string, Entry>()
  private loading = new Map<string, Loading>()
  private stop: () => void

  constructor(
    private db: () => Db,
    events: RecordEvents,
    bus: Bus,
    private ttlMs = CANDIDATES_TTL_MS,
    private now = Date.now,
  ) {
    // This process's writes as they commit; scaled out, the others' over the bus (which brings
    // this process's own again: applying a change twice changes nothing).
    const stopLocal = events.on((c) =>
      this.apply({ action: c.action, collection: c.collection.name, row: c.row }),
    )
    const stopRemote =
      bus.kind === 'redis'
        ? bus.subscribe('records', (message) => this.apply(message as RecordBusMessage))
        : () => {}
    this.stop = () => {
      stopLocal()
      stopRemote()
    }
  }

  /** The active, unbenched nodes serving `modelId` (whether connected and free is the registry's). */
  async candidates(modelId: string): Promise<CandidateRow[]> {
    const nodes = await this.nodes(modelId)
    const now = nowDate()
    const out: CandidateRow[] = []
    for (const n of nodes.values())
      if (n.active && n.benchedUntil < now)
        out.push({
          id: n.id,
          owner: n.owner,
          reputation: n.reputation,
          speed: n.speed,
          probation: n.probation,
          storedOnline: n.status === 'online' || n.status === 'busy',
        })
    return out
  }

  /** How many active nodes serve `modelId` and are online or busy (the `available_models` count). */
  async onlineCount(modelId: string): Promise<number> {
    let count = 0
    for (const n of (await this.nodes(modelId)).values())
      if (n.active && (n.status === 'online' || n.status === 'busy')) count++
    return count
  }

  close(): void {
    this.stop()
    this.entries.clear()
  }

  private nodes(modelId: string): Promise<Map<string, HeldNode>> {
    const entry = this.entries.get(modelId)
    if (entry && this.now() < entry.until) return Promise.resolve(entry.nodes)
    const pending = this.loading.get(modelId)
    // A read that a change overtook is not joined: it would answer what the change undid.
    if (pending && !pending.stale) return pending.rows
    const loading: Loading = { rows: readNodes(this.db(), modelId), stale: false }
    this.loading.set(modelId, loading)
    loading.rows
      .then((nodes) => {
        if (!loading.stale) this.entries.set(modelId, { nodes, until: this.now() + this.ttlMs })
      })
      .catch(() => {})
      .finally(() => {
        if (this.loading.get(modelId) === loading) this.loading.delete(modelId)
      })
    return loading.rows
  }

  private apply(change: RecordBusMessage) {
    if (change.collection !== 'nodes' && change.collection !== 'node_models') return
    for (const l of this.loading.values()) l.stale = true
    const row = change.row
    if (change.collection === 'node_models') {
      const entry = this.entries.get(String(row.model))
      if (!entry) return
      const nodeId = String(row.node)
      const held = entry.nodes.get(nodeId)
      if (change.action === 'delete' || !Number(row.is_serving)) entry.nodes.delete(nodeId)
      else if (!held)
        this.entries.delete(String(row.model)) // its node's facts are read with it
      else if ('measured_tokens_per_second' in row)
        held.speed = Number(row.measured_tokens_per_second)
      return
    }
    const nodeId = String(row.id)
    for (const entry of this.entries.values()) {
      const held = entry.nodes.get(nodeId)
      if (!held) continue
      if (change.action === 'delete') entry.nodes.delete(nodeId)
      else patchNode(held, row)
    }
  }
}

/** Only the columns the event carries: some writes return a few. */
function patchNode(held: HeldNode, row: Row) {
  if ('user' in row) held.owner = String(row.user)
  if ('reputation_score' in row) held.reputation = Number(row.reputation_score)
  if ('verification' in row) held.probation = row.verification === 'probation'
  if ('is_active' in row) held.active = Number(row.is_active) === 1
  if ('benched_until' in row) held.benchedUntil = String(row.benched_until ?? '')
  if ('status' in row) held.status = String(row.status)
}

async function readNodes(db: Db, modelId: string): Promise<Map<string, HeldNode>> {
  const rows = await db
    .selectFrom('node_models as nm')
    .innerJoin('nodes as n', 'n.id', 'nm.node')
    .select([
      'n.id as id',
      'n.user as owner',
      'n.reputation_score as reputation',
      'n.verification as verification',
      'n.is_active as is_active',
      'n.benched_until as benched_until',
      'n.status as status',
      'nm.measured_tokens_per_second as speed',
    ])
    .where('nm.model', '=', modelId)
    .where('nm.is_serving', '=', 1)
    .execute()
  const nodes = new Map<string, HeldNode>()
  for (const r of rows) {
    nodes.set(String(r.id), {
      id: String(r.id),
      owner: String(r.owner),
      reputation: Number(r.reputation),
      speed: Number(r.speed),
      probation: r.verification === 'probation',
      active: Number(r.is_active) === 1,
      benchedUntil: String(r.benched_until ?? ''),
      status: String(r.status),
    })
  }
  return nodes
}
