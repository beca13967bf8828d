/**
 * @module The node registry: one session per connected node socket. It turns what a node reports
 * (hello, heartbeats, model status) into server-side writes of `nodes` / `node_models` (a node
 * never writes records), pushes each node the desired state of its models, and tells the
 * scheduler about job frames, free slots and nodes that went away.
 */
import type { WebSocket } from 'ws'
import {
  nodeToServerFrameSchema,
  type NodeToServerFrame,
  type ServerToNodeFrame,
} from '@meshwork/protocol'
import type { CoreApp } from '../app.ts'
import { requireCollection } from '../collections/registry.ts'
import { server as superuser } from '../records/caller.ts'
import { nowDate } from '../../tools/dates.ts'
import { loadDesiredState } from './desired-state.ts'
import { dropNul } from '../../tools/nul.ts'

type JobFrame = Extract<NodeToServerFrame, { type: `job_${string}` }>

export interface RegistryListener {
  onJobFrame(nodeId: string, frame: JobFrame): void
  onNodeGone(nodeId: string): void
  /** Capacity may have appeared (hello, freed slot, a model started serving). */
  onCapacity(): void
}

export class NodeSession {
  maxJobs = 1
  busyJobs = 0
  helloed = false
  lastFrameAt = Date.now()
  /** Jobs the scheduler has given this node and not yet seen end. */
  readonly jobs = new Set<string>()
  lastDesired = ''
  chain: Promise<void> = Promise.resolve()

  constructor(
    readonly nodeId: string,
    readonly ws: WebSocket,
  ) {}

  get open(): boolean {
    return this.ws.readyState === 1
  }

  /** Until then the node counts as full (it said so, e.g. while a cancelled job winds down). */
  fullUntil = 0

  get freeSlots(): number {
    if (!this.helloed || !this.open || Date.now() < this.fullUntil) return 0
    return Math.max(0, this.maxJobs - this.jobs.size)
  }

  send(frame: ServerToNodeFrame): boolean {
    if (!this.open) return false
    this.ws.send(JSON.stringify(frame))
    return true
  }
}

const nodesCollection = () => requireCollection('nodes')
const nodeModelsCollection = () => requireCollection('node_models')

export class NodeRegistry {
  private sessions = new Map<string, NodeSession>()
  private timer: NodeJS.Timeout
  private unsubscribe: () => void
  listener: RegistryListener | null = null
  private closed = false

  constructor(
    private core: CoreApp,
    private heartbeatTimeoutMs = 15_000,
  ) {
    this.timer = setInterval(() => this.sweep(), Math.min(5000, heartbeatTimeoutMs / 2))
    this.timer.unref()
    // What the owner changes reaches the node at once; a deleted node loses its socket.
    this.unsubscribe = core.events.on((change) => {
      if (change.collection.name === 'node_models')
        void this.pushDesiredState(String(change.row.node))
      if (change.collection.name === 'nodes' && change.action === 'delete')
        this.get(String(change.row.id))?.ws.terminate()
    })
  }

  get(nodeId: string): NodeSession | undefined {
    return this.sessions.get(nodeId)
  }

  all(): NodeSession[] {
    return [...this.sessions.values()]
  }

  attach(nodeId: string, ws: WebSocket): NodeSession {
    // A node that reconnects replaces its old socket: its jobs there are lost (the agent aborts
    // them when a socket drops), so they go to other nodes now rather than after a stall.
    const previous = this.sessions.get(nodeId)
    if (previous) {
      this.sessions.delete(nodeId)
      this.listener?.onNodeGone(nodeId)
      previous.ws.terminate()
    }
    const session = new NodeSession(nodeId, ws)
    this.sessions.set(nodeId, session)
    ws.on('message', (data, isBinary) => {
      if (isBinary) return
      let parsed: unknown
      try {
        parsed = JSON.parse(String(data), dropNul)
      } catch {
        return
      }
      const frame = nodeToServerFrameSchema.safeParse(parsed)
      if (frame.success) this.onFrame(session, frame.data)
    })
    ws.on('close', () => this.detach(session))
    ws.on('error', () => ws.terminate())
    this.enqueue(session, async () => {
      await this.updateNode(nodeId, { status: 'online', last_seen: nowDate() })
      await this.pushDesiredState(nodeId, true)
    })
    return session
  }

  async pushDesiredState(nodeId: string, force = false): Promise<void> {
    const session = this.sessions.get(nodeId)
    if (!session) return
    const nodeModels = await loadDesiredState(this.core.database.db, nodeId)
    const json = JSON.stringify(nodeModels)
    if (!force && json === session.lastDesired) return
    session.lastDesired = json
    session.send({ type: 'desired_state', node_models: nodeModels })
  }

  close(): void {
    // Sockets closing during shutdown must not reach the scheduler or the (closing) database.
    this.closed = true
    this.listener = null
    clearInterval(this.timer)
    this.unsubscribe()
    for (const s of this.sessions.values()) s.ws.terminate()
  }

  private onFrame(session: NodeSession, frame: NodeToServerFrame) {
    session.lastFrameAt = Date.now()
    if (this.sessions.get(session.nodeId) !== session) return
    switch (frame.type) {
      case 'hello':
        session.maxJobs = frame.max_jobs
        session.helloed = true
        this.enqueue(session, async () => {
          await this.updateNode(session.nodeId, {
            hardware: frame.hardware,
            agent_version: frame.agent_version,
            max_jobs: frame.max_jobs,
            status: 'online',
            last_seen: nowDate(),
          })
          this.listener?.onCapacity()
        })
        return
      case 'heartbeat': {
        const freed = frame.max_jobs > session.maxJobs
        session.maxJobs = frame.max_jobs
        session.busyJobs = frame.busy_jobs
        const busy = Math.max(frame.busy_jobs, session.jobs.size) >= frame.max_jobs
        this.enqueue(session, () =>
          this.updateNode(session.nodeId, {
            status: busy ? 'busy' : 'online',
            last_seen: nowDate(),
          }),
        )
        if (freed) this.listener?.onCapacity()
        return
      }
      case 'model_status':
        this.enqueue(session, () => this.saveModelStatus(session.nodeId, frame))
        return
      default:
        this.listener?.onJobFrame(session.nodeId, frame)
    }
  }

  private async saveModelStatus(
    nodeId: string,
    frame: Extract<NodeToServerFrame, { type: 'model_status' }>,
  ) {
    const db = this.core.database.db
    const row = await db
      .selectFrom('node_models')
      .selectAll()
      .where('id', '=', frame.node_model_id)
      .where('node', '=', nodeId)
      .executeTakeFirst()
    if (!row) return // not this node's model: ignored
    const next = {
      is_downloaded: frame.is_downloaded ? 1 : 0,
      is_serving: frame.is_serving ? 1 : 0,
      download_progress: String(Math.round(frame.download_progress * 10) / 10),
      tokens_per_second: Math.round(frame.tokens_per_second * 10) / 10,
      error_message: frame.error_message,
    }
    const changed = Object.entries(next).filter(([k, v]) => String(row[k]) !== String(v))
    if (!changed.length) return
    await this.core.records.update(
      superuser,
      nodeModelsCollection(),
      frame.node_model_id,
      Object.fromEntries(changed),
    )
    if (frame.is_serving && !Number(row.is_serving)) this.listener?.onCapacity()
  }

  private detach(session: NodeSession) {
    if (this.closed || this.sessions.get(session.nodeId) !== session) return
    this.sessions.delete(session.nodeId)
    this.listener?.onNodeGone(session.nodeId)
    session.chain = session.chain.then(async () => {
      // A node may be back already on a new socket; then it stays online.
      if (this.sessions.has(session.nodeId)) return
      await this.updateNode(session.nodeId, { status: 'offline', last_seen: nowDate() }).catch(
        () => {},
      )
    })
  }

  private sweep() {
    const cutoff = Date.now() - this.heartbeatTimeoutMs
    for (const s of this.sessions.values()) if (s.lastFrameAt < cutoff) s.ws.terminate()
  }

  /** Writes of one node run in order, so a late write never overtakes an earlier one. */
  private enqueue(session: NodeSession, task: () => Promise<void>) {
    if (this.closed) return
    // A failed write is reported and the chain goes on: one bad write must not stall a node.
    session.chain = session.chain
      .then(task)
      .catch((err) => console.error('node registry write failed', err))
  }

  private async updateNode(nodeId: string, values: Record<string, unknown>) {
    const exists = await this.core.database.db
      .selectFrom('nodes')
      .select('id')
      .where('id', '=', nodeId)
      .executeTakeFirst()
    if (!exists) return
    await this.core.records.update(superuser, nodesCollection(), nodeId, values)
  }
}
