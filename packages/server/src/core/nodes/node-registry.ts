/**
 * @module The node registry: one session per connected node socket. It turns what a node reports
 * (hello, heartbeats, model status) into server-side writes of `nodes` / `node_models` (a node
 * never writes records), pushes each node the desired state of its models, and tells the
 * scheduler about job frames, free slots and nodes that went away. Scaled out, the relay makes
 * nodes connected to other processes available to this process's scheduler (node-relay.ts).
 */
import type { WebSocket } from 'ws'
import { nodeToServerFrameSchema, type NodeToServerFrame } from '@meshwork/protocol'
import type { CoreApp } from '../app.ts'
import type { RecordBusMessage } from '../records/record-events.ts'
import { formatDate, nowDate } from '../../tools/dates.ts'
import { saveModelStatus, storeOfflineSince, updateNode } from './node-writes.ts'
import { loadDesiredState } from './desired-state.ts'
import { parseJsonDroppingNul } from '../../tools/nul.ts'
import { NodeRelay } from './node-relay.ts'
import { RelayedJobCheck } from './relayed-job-check.ts'
import { ModelPins } from '../models/model-pins.ts'
import { guarded } from '../../tools/background.ts'
import {
  closeReplaced,
  NodeSession,
  type NodeHandle,
  type RegistryListener,
  type ScoreListener,
} from './node-session.ts'

// The registry's users import these from here.
export {
  NodeSession,
  type JobFrame,
  type ScoreFrame,
  type ScoreListener,
  type NodeHandle,
  type RegistryListener,
} from './node-session.ts'
import { log } from '../../tools/log.ts'
import { PauseWatch } from '../../tools/pause-watch.ts'

/** Heartbeats come every 5 s: one in twelve writes the row when nothing else changed. */
export const LAST_SEEN_REFRESH_MS = 60_000
/** How long a node whose socket closed stays stored online, waiting for it to reconnect. */
export const OFFLINE_GRACE_MS = 1000

export class NodeRegistry {
  private sessions = new Map<string, NodeSession>()
  private timer: NodeJS.Timeout
  private pauses: PauseWatch
  private unsubscribe: () => void
  listener: RegistryListener | null = null
  scores: ScoreListener | null = null
  private closed = false
  /** Scaled out only: the hand-off of jobs to nodes connected to other processes. */
  private relay: NodeRelay | null = null
  /** Scaled out only: relayed jobs whose cancel was lost on the bus, found in the database. */
  private relayedCheck: RelayedJobCheck | null = null
  private stopResumed = () => {}
  /** Size and sha256 of models added by URL alone, read from their source when first wanted. */
  private pins: ModelPins

  constructor(
    private core: CoreApp,
    private heartbeatTimeoutMs = 15_000,
    /** How stale a connected node's stored `last_seen` may grow while its status stays the same.
     * Liveness never reads it (the sweep below goes by the socket's last frame). */
    private lastSeenRefreshMs = LAST_SEEN_REFRESH_MS,
    private offlineGraceMs = OFFLINE_GRACE_MS,
  ) {
    this.pins = new ModelPins(core, (nodeId) => {
      this.refreshDesiredState(nodeId, true)
      this.pinFor(nodeId)
    })
    const sweepMs = Math.min(5000, heartbeatTimeoutMs / 2)
    this.pauses = new PauseWatch(sweepMs)
    this.timer = setInterval(() => this.sweep(), sweepMs)
    this.timer.unref()
    // What the owner changes reaches the node at once, on whichever process the change was made
    // (record events come over the bus); a deleted node loses its socket.
    this.unsubscribe = core.bus.subscribe('records', (message) => {
      const change = message as RecordBusMessage
      if (change.collection === 'node_models') {
        const nodeId = String(change.row.node)
        this.refreshDesiredState(nodeId)
        // A download asked for and not begun may be waiting for its model's size and sha256.
        const row = change.row
        if (
          Number(row.requested_download) &&
          !Number(row.is_downloaded) &&
          !(Number.parseFloat(String(row.download_progress)) > 0)
        )
          this.pinFor(nodeId)
      }
      // A model's file facts changed (pinned from its source, or edited): resend where it matters.
      if (change.collection === 'models')
        for (const nodeId of this.sessions.keys()) this.refreshDesiredState(nodeId)
      if (change.collection === 'nodes' && change.action === 'delete')
        this.sessions.get(String(change.row.id))?.ws.terminate()
    })
    if (core.bus.kind === 'redis') {
      this.relay = new NodeRelay(
        core.bus,
        {
          local: (nodeId) => this.sessions.get(nodeId),
          all: () => this.sessions.values(),
          onRemoteJobFrame: (nodeId, frame) => this.listener?.onJobFrame(nodeId, frame),
          onRemoteNodeGone: (nodeId) => this.listener?.onNodeGone(nodeId),
          onRemoteCapacity: () => this.listener?.onCapacity(),
          replaced: (session) => this.replace(session),
        },
        heartbeatTimeoutMs,
        core.processId,
      )
      const relay = this.relay
      this.relayedCheck = new RelayedJobCheck(core.database.db, relay, (session) => {
        this.listener?.onCapacity()
        if (session.helloed) relay.announce(session)
      })
      // What was cancelled while the bus was down is stopped now, not at the next sweep.
      this.stopResumed = core.bus.onResumed(() => this.relayedCheck?.run())
    }
  }

  /** Nodes connected to this process, and (scaled out) those known on other processes. */
  counts(): { local: number; remote: number } {
    return { local: this.sessions.size, remote: this.relay?.remoteCount ?? 0 }
  }

  /** A node connected to this process. */
  local(nodeId: string): NodeSession | undefined {
    return this.sessions.get(nodeId)
  }

  /** Nodes connected to this process. */
  locals(): Iterable<NodeSession> {
    return this.sessions.values()
  }

  /** A node this process can give jobs to: connected here, or (scaled out) to another process. */
  get(nodeId: string): NodeHandle | undefined {
    return this.sessions.get(nodeId) ?? this.relay?.remote(nodeId)
  }

  /**
   * Stops a job that no process's scheduler follows any more (its process died): the node is told
   * to cancel it, wherever its socket lives, and its slot is free again.
   */
  cancelOrphanJob(nodeId: string, jobId: string): void {
    const local = this.sessions.get(nodeId)
    if (local) {
      this.relay?.dropRelayed(local, jobId)
      local.send({ type: 'job_cancel', job_id: jobId })
      this.listener?.onCapacity()
      return
    }
    this.relay?.remote(nodeId)?.send({ type: 'job_cancel', job_id: jobId })
  }

  /** Draining: local nodes are announced full to the other processes from now on. */
  startDraining(): void {
    if (!this.relay) return
    this.relay.draining = true
    for (const session of this.sessions.values()) if (session.helloed) this.relay.announce(session)
  }

  /** Jobs local nodes run for other processes. */
  get relayedJobs(): number {
    let n = 0
    for (const s of this.sessions.values()) n += s.relayedJobs.size
    return n
  }

  attach(nodeId: string, ws: WebSocket): NodeSession {
    // A node that reconnects replaces its old socket (the newest wins: a half-open old socket, or
    // a clone of the machine, is closed with NODE_REPLACED_CLOSE_CODE): its jobs there are lost
    // (the agent aborts them when a socket drops), so they go to other nodes now rather than
    // after a stall.
    const previous = this.sessions.get(nodeId)
    if (previous) this.replace(previous)
    const session = new NodeSession(nodeId, ws)
    // What the node's row says now: a node back within OFFLINE_GRACE_MS (or replacing its socket)
    // was never written offline, and a reconnect loop writes nothing per connection. Its writes
    // follow the earlier socket's, in order.
    const before = previous ?? this.leaving.get(nodeId)
    this.leaving.delete(nodeId)
    if (before) {
      session.chain = before.chain
      session.written = before.written
      session.helloWritten = before.helloWritten
    }
    this.sessions.set(nodeId, session)
    // Likewise when it was connected to another process until now; scaled out, the newest
    // socket wins over one on another process too.
    this.relay?.claim(session)
    ws.on('message', (data, isBinary) => {
      if (isBinary) return
      let parsed: unknown
      try {
        parsed = parseJsonDroppingNul(String(data))
      } catch {
        return
      }
      const frame = nodeToServerFrameSchema.safeParse(parsed)
      // What a frame sets off (the scheduler, the relay) must not throw into the socket's events,
      // where it would end the process.
      if (frame.success)
        guarded(`node frame ${frame.data.type}`, () => this.onFrame(session, frame.data))
    })
    ws.on('close', () => guarded('node disconnect', () => this.detach(session)))
    ws.on('error', () => ws.terminate())
    this.enqueue(session, async () => {
      const written = session.written
      if (written?.status !== 'online' || Date.now() - written.at >= this.lastSeenRefreshMs)
        await this.writeStatus(session, 'online')
      await this.pushDesiredState(nodeId, true)
      this.pinFor(nodeId)
    })
    return session
  }

  /** Sends a node connected here its desired state, after the writes queued before (in order;
   * a failed read is logged, the node keeps what it had). */
  private refreshDesiredState(nodeId: string, force = false): void {
    const session = this.sessions.get(nodeId)
    if (session) this.enqueue(session, () => this.pushDesiredState(nodeId, force))
  }

  async pushDesiredState(nodeId: string, force = false): Promise<void> {
    const session = this.sessions.get(nodeId)
    if (!session) return
    const nodeModels = await loadDesiredState(this.core.database.db, nodeId)
    session.modelIds = new Set(nodeModels.map((m) => m.id))
    const json = JSON.stringify(nodeModels)
    if (!force && json === session.lastDesired) return
    session.lastDesired = json
    session.send({ type: 'desired_state', node_models: nodeModels })
  }

  /** Pins, in the background, the models a node connected here wants and cannot be sent yet. */
  private pinFor(nodeId: string): void {
    if (!this.sessions.has(nodeId)) return
    this.pins.pinFor(nodeId).catch((err) => {
      if (!this.closed) log.error({ err }, 'model pinning failed')
    })
  }

  /** Takes a node's socket out for a newer one (here or on another process): its jobs here go
   * elsewhere, and its row stays as the newer socket's writes make it. */
  private replace(previous: NodeSession): void {
    this.sessions.delete(previous.nodeId)
    this.listener?.onNodeGone(previous.nodeId)
    this.relay?.gone(previous.nodeId)
    closeReplaced(previous.ws)
  }

  close(): void {
    // Sockets closing during shutdown must not reach the scheduler or the (closing) database.
    this.closed = true
    this.listener = null
    this.scores = null
    clearInterval(this.timer)
    this.unsubscribe()
    this.stopResumed()
    this.relayedCheck?.close()
    this.pins.close()
    // Other processes give this process's jobs on these nodes to others now, not after a timeout.
    for (const nodeId of this.sessions.keys()) this.relay?.gone(nodeId)
    this.relay?.close()
    for (const s of this.sessions.values()) s.ws.terminate()
  }

  private onFrame(session: NodeSession, frame: NodeToServerFrame) {
    session.lastFrameAt = Date.now()
    if (this.sessions.get(session.nodeId) !== session) return
    switch (frame.type) {
      case 'hello': {
        session.maxJobs = frame.max_jobs
        session.helloed = true
        // Bounded by the protocol's schema; shown to other users only as plain text.
        const engine = frame.engines[0]
        session.backend = engine?.backend ?? 'unknown'
        // What the node says of itself. Its status and last_seen were written when it attached
        // (in order before this): writing them again would only move last_seen by milliseconds.
        this.enqueueReport(session, 'hello', async () => {
          const values = {
            hardware: frame.hardware,
            agent_version: frame.agent_version,
            max_jobs: frame.max_jobs,
            backend: session.backend,
            engine_version: engine ? `${engine.kind} ${engine.version ?? ''}`.trim() : '',
          }
          // The same hello again (every reconnect) has nothing to write.
          const json = JSON.stringify(values)
          if (json !== session.helloWritten) {
            await this.updateNode(session.nodeId, values)
            session.helloWritten = json
          }
          this.listener?.onCapacity()
          this.relay?.announce(session)
        })
        return
      }
      case 'score_result':
      case 'score_failed':
        this.scores?.onScoreFrame(session.nodeId, frame)
        return
      case 'heartbeat': {
        const freed = frame.max_jobs > session.maxJobs
        session.maxJobs = frame.max_jobs
        session.busyJobs = frame.busy_jobs
        session.draining = frame.draining === true
        const busy = Math.max(frame.busy_jobs, session.jobs.size) >= frame.max_jobs
        const status = busy ? 'busy' : 'online'
        // At 10,000 nodes a write per heartbeat is 2,000 row writes (and their record events) a
        // second: the row is written when the status changes or its last_seen grows stale.
        const written = session.written
        if (
          !written ||
          written.status !== status ||
          Date.now() - written.at >= this.lastSeenRefreshMs
        ) {
          session.written = { status, at: Date.now() }
          this.enqueueReport(session, 'status', () => this.writeStatus(session, status))
        }
        if (freed) this.listener?.onCapacity()
        if (session.helloed) this.relay?.announce(session)
        return
      }
      case 'model_status':
        // Not its own node model (known once its desired state loaded): no read, nothing queued.
        if (session.modelIds?.has(frame.node_model_id) === false) return
        return this.enqueueReport(session, `model:${frame.node_model_id}`, () =>
          this.saveModelStatus(session, frame),
        )
      default:
        if (!this.relay?.route(session, frame)) this.listener?.onJobFrame(session.nodeId, frame)
    }
  }

  private async saveModelStatus(
    { nodeId, modelIds }: NodeSession,
    frame: Extract<NodeToServerFrame, { type: 'model_status' }>,
  ) {
    if (modelIds?.has(frame.node_model_id) === false) return // queued before its desired state
    const saved = await saveModelStatus(this.core, nodeId, frame)
    if (saved?.beganServing) {
      this.listener?.onCapacity()
      this.relay?.capacity()
    }
  }

  private detach(session: NodeSession) {
    if (this.closed || this.sessions.get(session.nodeId) !== session) return
    this.sessions.delete(session.nodeId)
    this.listener?.onNodeGone(session.nodeId)
    this.relay?.gone(session.nodeId)
    // Written offline unless it is back within the grace (an agent's first reconnect comes
    // within a second): a node reconnecting in a loop costs no write per connection.
    this.leaving.set(session.nodeId, session)
    const timer = setTimeout(() => {
      if (this.closed || this.leaving.get(session.nodeId) !== session) return
      session.written = { status: 'offline', at: Date.now() }
      session.chain = session.chain.then(async () => {
        // A node may be back already on a new socket (its writes follow this one); then it stays
        // online.
        if (!this.sessions.has(session.nodeId))
          await this.updateNode(session.nodeId, { status: 'offline', last_seen: nowDate() }).catch(
            () => {},
          )
        if (this.leaving.get(session.nodeId) === session) this.leaving.delete(session.nodeId)
      })
    }, this.offlineGraceMs)
    timer.unref()
  }

  /** Nodes whose socket closed and whose offline write waits for the grace, by node id. */
  private leaving = new Map<string, NodeSession>()

  private sweep() {
    // Woken from a pause of this process: the nodes' heartbeats of meanwhile are still unread.
    const cutoff = this.pauses.wasPaused() ? -Infinity : Date.now() - this.heartbeatTimeoutMs
    for (const s of this.sessions.values()) if (s.lastFrameAt < cutoff) s.ws.terminate()
    this.relayedCheck?.run()
    if (this.relay && !this.sweepingAbandoned) {
      this.sweepingAbandoned = true
      this.storeAbandonedOffline()
        .catch((err) => {
          if (!this.closed) log.error({ err }, 'storing abandoned nodes offline failed')
        })
        .finally(() => {
          this.sweepingAbandoned = false
        })
    }
  }

  private sweepingAbandoned = false

  /**
   * Scaled out: a node is written offline by the process holding its socket when the socket goes,
   * and a starting process leaves nodes alone. A process that dies (SIGKILL) writes nothing, so a
   * node whose agent never came back stayed stored online for ever (its model listed as served).
   * A connected node's `last_seen` is rewritten at least every `lastSeenRefreshMs` (plus a
   * heartbeat): one whose row is older than that, with margin, has no socket on any live process.
   */
  private async storeAbandonedOffline(): Promise<void> {
    const stale = formatDate(
      new Date(Date.now() - 2 * this.lastSeenRefreshMs - this.heartbeatTimeoutMs),
    )
    // One connected here whose writes fell behind: its next heartbeat writes its status again.
    for (const id of await storeOfflineSince(this.core, stale)) {
      const session = this.sessions.get(id)
      if (session) session.written = null
    }
  }

  /** Writes of one node run in order, so a late write never overtakes an earlier one. */
  private enqueue(session: NodeSession, task: () => Promise<void>) {
    if (this.closed) return
    // A failed write is reported and the chain goes on: one bad write must not stall a node.
    session.chain = session.chain.then(task).catch((err) => {
      if (!this.closed) log.error({ err }, 'node registry write failed')
    })
  }

  /**
   * A node's report of `key` (its hello, its status, one model's status) replaces one of the same
   * key still waiting to be written: what is written is the latest, and a node sending reports
   * faster than they can be written (a flood) costs one write per key at a time, not one per frame.
   */
  private enqueueReport(session: NodeSession, key: string, write: () => Promise<void>) {
    const waiting = session.unwritten.has(key)
    session.unwritten.set(key, write)
    if (waiting) return
    const run = () => {
      // Replaced meanwhile: the newer socket reports its own view.
      const current = this.sessions.get(session.nodeId)
      if (current && current !== session) return session.unwritten.delete(key)
      this.enqueue(session, () => {
        const latest = session.unwritten.get(key)
        session.unwritten.delete(key)
        return latest ? latest() : Promise.resolve()
      })
    }
    const wait = session.reportWait(key)
    if (wait > 0) setTimeout(run, wait).unref()
    else run()
  }

  /** The node's status and last_seen, remembered on the session (see the heartbeat); after a
   * failed write the next heartbeat writes again. */
  private async writeStatus(session: NodeSession, status: 'online' | 'busy') {
    session.written = { status, at: Date.now() }
    try {
      await this.updateNode(session.nodeId, { status, last_seen: nowDate() })
    } catch (err) {
      session.written = null
      throw err
    }
  }

  private updateNode(nodeId: string, values: Record<string, unknown>) {
    return updateNode(this.core, nodeId, values)
  }
}
