/**
 * @module Job hand-off between coordinator processes (scaled out, over the Redis bus). A node's
 * socket lives on one process, but a chat request may be scheduled on any. Each process announces
 * its nodes (on hello, every heartbeat, and when a process starts) and when capacity appears;
 * every other process keeps a
 * `RemoteNode` for them, which the scheduler uses like a local session: its frames travel over the
 * bus to the process holding the socket, and the node's job frames travel back to the process
 * that offered the job. A process that stops announcing a node (it crashed) loses it after the
 * heartbeat timeout, and its jobs go to other nodes.
 */
import type { ServerToNodeFrame } from '@meshwork/protocol'
import type { Bus } from '../../tools/bus/bus.ts'
import { newRecordId } from '../../tools/ids.ts'
import { background } from '../../tools/background.ts'
import type { JobFrame, NodeHandle, NodeSession } from './node-session.ts'
import { PauseWatch } from '../../tools/pause-watch.ts'

/** What the relay needs of the local registry. */
export interface LocalNodes {
  local(nodeId: string): NodeSession | undefined
  all(): Iterable<NodeSession>
  onRemoteJobFrame(nodeId: string, frame: JobFrame): void
  onRemoteNodeGone(nodeId: string): void
  onRemoteCapacity(): void
  /** A newer socket of this node on another process took its place: the local one goes. */
  replaced(session: NodeSession): void
}

/** A job a local node runs for another process. */
export interface RelayedJob {
  jobId: string
  nodeId: string
  /** The request it answers (the offer's `request_id`). */
  requestId: string
  /** When its offer came (Date.now). */
  since: number
}

type Broadcast =
  | { kind: 'presence'; from: string; nodeId: string; maxJobs: number; busyJobs: number }
  | { kind: 'gone'; from: string; nodeId: string }
  | { kind: 'capacity'; from: string }
  | { kind: 'sync'; from: string }
  | { kind: 'claim'; from: string; nodeId: string; claim: string }

type Direct =
  | { kind: 'to_node'; from: string; nodeId: string; frame: ServerToNodeFrame }
  | { kind: 'job_frame'; from: string; nodeId: string; frame: JobFrame }

const BROADCAST = 'nodes'
/** Least time between two announcements of one node (an honest one sends a heartbeat every 5 s). */
export const ANNOUNCE_GAP_MS = 100
const direct = (processId: string) => `process:${processId}`
const JOB_ENDS = new Set(['job_done', 'job_failed', 'job_rejected'])

/** A node connected to another process, as the scheduler sees it. */
export class RemoteNode implements NodeHandle {
  readonly helloed = true
  readonly open = true
  fullUntil = 0
  /** Jobs this process has given the node and not yet seen end. */
  readonly jobs = new Set<string>()
  seenAt = Date.now()

  constructor(
    readonly nodeId: string,
    public owner: string,
    public maxJobs: number,
    public busyJobs: number,
    private relay: NodeRelay,
  ) {}

  get freeSlots(): number {
    if (Date.now() < this.fullUntil) return 0
    // The node's own count (as of its last heartbeat) covers other processes' jobs; ours are live.
    return Math.max(0, this.maxJobs - Math.max(this.busyJobs, this.jobs.size))
  }

  send(frame: ServerToNodeFrame): boolean {
    this.relay.toNode(this, frame)
    return true
  }
}

export class NodeRelay {
  private remotes = new Map<string, RemoteNode>()
  /** Jobs a local node runs for another process, by job id, with the process that offered it. */
  private relayed = new Map<string, { origin: string } & Omit<RelayedJob, 'jobId'>>()
  private unsubscribe: Array<() => void>
  private timer: NodeJS.Timeout
  private pauses: PauseWatch
  /** Draining: local nodes are announced full, so other processes offer them nothing new. */
  draining = false

  constructor(
    private bus: Bus,
    private nodes: LocalNodes,
    private timeoutMs: number,
    readonly processId = newRecordId(),
  ) {
    this.unsubscribe = [
      bus.subscribe(BROADCAST, (m) => this.onBroadcast(m as Broadcast)),
      bus.subscribe(direct(this.processId), (m) => this.onDirect(m as Direct)),
    ]
    const sweepMs = Math.max(50, Math.min(5000, timeoutMs / 3))
    this.pauses = new PauseWatch(sweepMs)
    this.timer = setInterval(() => this.sweep(), sweepMs)
    this.timer.unref()
    // A process that starts asks the others for their nodes rather than wait for heartbeats.
    background(
      bus.subscribed().then(() => this.publish({ kind: 'sync', from: this.processId })),
      'asking the other processes for their nodes',
    )
  }

  get remoteCount(): number {
    return this.remotes.size
  }

  remote(nodeId: string): RemoteNode | undefined {
    return this.remotes.get(nodeId)
  }

  /**
   * A node's socket opened here. One credential may be used by two machines at once (a cloned
   * node), or an agent may reconnect through the balancer while its old socket is still open on
   * another process: the newest socket wins everywhere. Redis delivers the claims on one channel
   * in one order to every process, so a process whose own claim came back before another's knows
   * its socket is the older one and closes it; one that hears another's claim first is the newer.
   */
  claim(session: NodeSession): void {
    this.forget(session.nodeId)
    this.publish({
      kind: 'claim',
      from: this.processId,
      nodeId: session.nodeId,
      claim: session.claim,
    })
  }

  /**
   * A local node said hello or sent a heartbeat. At most one announcement per node every
   * ANNOUNCE_GAP_MS, the latest state in it: a node sending heartbeats as fast as it could made a
   * Redis message per frame for every other process to read (and schedule on).
   */
  announce(session: NodeSession): void {
    const wait = session.announcedAt + ANNOUNCE_GAP_MS - Date.now()
    if (wait <= 0) return this.announceNow(session)
    if (session.announceTimer) return
    session.announceTimer = setTimeout(() => {
      session.announceTimer = null
      if (this.nodes.local(session.nodeId) === session && session.open) this.announceNow(session)
    }, wait)
    session.announceTimer.unref()
  }

  private announceNow(session: NodeSession): void {
    session.announcedAt = Date.now()
    this.publish({
      kind: 'presence',
      from: this.processId,
      nodeId: session.nodeId,
      maxJobs: session.maxJobs,
      busyJobs:
        this.draining || session.draining
          ? session.maxJobs
          : Math.max(session.busyJobs, session.jobs.size + session.relayedJobs.size),
    })
  }

  /** A job of a process that is gone (taken over): the local node stops it and frees its slot. */
  dropRelayed(session: NodeSession, jobId: string): void {
    if (!this.relayed.delete(jobId)) return
    session.relayedJobs.delete(jobId)
  }

  /** Jobs local nodes run for other processes, as of now. */
  relayedJobs(): RelayedJob[] {
    return [...this.relayed].map(([jobId, r]) => ({
      jobId,
      nodeId: r.nodeId,
      requestId: r.requestId,
      since: r.since,
    }))
  }

  /**
   * Stops a job a local node runs for another process as that process's `job_cancel` would: the
   * node is told and its slot is free. The session, or null when the job ended meanwhile (its end
   * or a cancel came first) or its node left.
   */
  cancelRelayed(jobId: string): NodeSession | null {
    const relayed = this.relayed.get(jobId)
    if (!relayed) return null
    this.relayed.delete(jobId)
    const session = this.nodes.local(relayed.nodeId)
    if (!session?.relayedJobs.delete(jobId)) return null
    session.send({ type: 'job_cancel', job_id: jobId })
    return session
  }

  /** A local node's socket is gone: its relayed jobs are lost, and their processes hear so. */
  gone(nodeId: string): void {
    for (const [jobId, r] of this.relayed) if (r.nodeId === nodeId) this.relayed.delete(jobId)
    this.publish({ kind: 'gone', from: this.processId, nodeId })
  }

  capacity(): void {
    this.publish({ kind: 'capacity', from: this.processId })
  }

  /** A job frame of a local node: true when it belongs to another process and went there. */
  route(session: NodeSession, frame: JobFrame): boolean {
    const relayed = this.relayed.get(frame.job_id)
    if (!relayed || relayed.nodeId !== session.nodeId) return false
    this.bus.publish(direct(relayed.origin), {
      kind: 'job_frame',
      from: this.processId,
      nodeId: session.nodeId,
      frame,
    })
    if (JOB_ENDS.has(frame.type)) {
      this.relayed.delete(frame.job_id)
      session.relayedJobs.delete(frame.job_id)
      // The slot is free for this process's own queue too.
      this.nodes.onRemoteCapacity()
    }
    return true
  }

  toNode(node: RemoteNode, frame: ServerToNodeFrame): void {
    this.bus.publish(direct(node.owner), {
      kind: 'to_node',
      from: this.processId,
      nodeId: node.nodeId,
      frame,
    })
  }

  close(): void {
    clearInterval(this.timer)
    for (const off of this.unsubscribe) off()
  }

  private publish(message: Broadcast) {
    this.bus.publish(BROADCAST, message)
  }

  private onBroadcast(m: Broadcast) {
    if (m.kind === 'claim') return this.onClaim(m)
    if (m.from === this.processId) return
    if (m.kind === 'capacity') return this.nodes.onRemoteCapacity()
    if (m.kind === 'sync') {
      for (const session of this.nodes.all()) if (session.helloed) this.announceNow(session)
      return
    }
    const known = this.remotes.get(m.nodeId)
    if (m.kind === 'gone') {
      if (known?.owner === m.from) this.forget(m.nodeId)
      return
    }
    if (this.nodes.local(m.nodeId)) return // it reconnected here; the old process will say 'gone'
    if (known && known.owner !== m.from) this.forget(m.nodeId) // it moved: its jobs there are lost
    const node = this.remotes.get(m.nodeId)
    if (node) {
      node.maxJobs = m.maxJobs
      node.busyJobs = m.busyJobs
      node.seenAt = Date.now()
      if (node.freeSlots > 0) this.nodes.onRemoteCapacity()
      return
    }
    this.remotes.set(m.nodeId, new RemoteNode(m.nodeId, m.from, m.maxJobs, m.busyJobs, this))
    this.nodes.onRemoteCapacity()
  }

  private onClaim(m: Extract<Broadcast, { kind: 'claim' }>) {
    const session = this.nodes.local(m.nodeId)
    if (m.from === this.processId) {
      if (session?.claim === m.claim) session.claimHeard = true
      return
    }
    // The jobs this process gave the node where it was until now are lost with that socket.
    if (this.remotes.get(m.nodeId)?.owner !== m.from) this.forget(m.nodeId)
    if (session?.claimHeard) this.nodes.replaced(session)
  }

  private onDirect(m: Direct) {
    if (m.kind === 'job_frame') return this.nodes.onRemoteJobFrame(m.nodeId, m.frame)
    const session = this.nodes.local(m.nodeId)
    const frame = m.frame
    if (!session?.open) {
      // The node left this process: the offering process hears at once instead of after a timeout.
      if (frame.type === 'job_offer') {
        const rejected: JobFrame = {
          type: 'job_rejected',
          job_id: frame.job_id,
          reason: 'The node went offline',
        }
        this.bus.publish(direct(m.from), {
          kind: 'job_frame',
          from: this.processId,
          nodeId: m.nodeId,
          frame: rejected,
        })
      }
      return
    }
    if (frame.type === 'job_offer') {
      this.relayed.set(frame.job_id, {
        origin: m.from,
        nodeId: m.nodeId,
        requestId: frame.request_id,
        since: Date.now(),
      })
      session.relayedJobs.add(frame.job_id)
    } else if (frame.type === 'job_cancel') {
      this.relayed.delete(frame.job_id)
      session.relayedJobs.delete(frame.job_id)
    }
    session.send(frame)
  }

  /** The node is no longer on the process that had it: the jobs this process gave it there are lost. */
  forget(nodeId: string): void {
    if (!this.remotes.delete(nodeId)) return
    this.nodes.onRemoteNodeGone(nodeId)
  }

  private sweep() {
    // Woken from a pause of this process: the other processes' announcements are still unread.
    if (this.pauses.wasPaused()) return
    const cutoff = Date.now() - this.timeoutMs
    for (const node of [...this.remotes.values()])
      if (node.seenAt < cutoff) this.forget(node.nodeId)
  }
}
