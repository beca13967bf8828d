/**
 * @module One connected node socket (NodeSession) and the shapes the scheduler and the relay use
 * for any node, local or remote. Kept apart from node-registry.ts so that node-relay.ts can use
 * them without importing the registry that imports it.
 */
import { randomUUID } from 'node:crypto'
import type { WebSocket } from 'ws'
import {
  NODE_NOT_READING_CLOSE_CODE,
  NODE_REPLACED_CLOSE_CODE,
  type NodeToServerFrame,
  type ServerToNodeFrame,
} from '@meshwork/protocol'
import { log } from '../../tools/log.ts'

/**
 * Most bytes a node socket may hold in this process, sent and not yet taken by the kernel (whose
 * own buffers hold a few MB more). The most an honest node is ever sent at once is a job offer for
 * each of its slots: 64 offers of at most about 130 kB (a context of 8,000 tokens, as JSON), 8 MiB;
 * the bound is twice that. A node past it is not reading its socket: it is disconnected (its jobs
 * go to other nodes, as for any disconnect), where before every frame sent to it stayed here.
 */
export const NODE_SEND_BUFFER_LIMIT = 16 * 1024 * 1024

export type JobFrame = Extract<NodeToServerFrame, { type: `job_${string}` }>
export type ScoreFrame = Extract<NodeToServerFrame, { type: `score_${string}` }>

/** Where reference nodes' scores go (verification/reference-scores.ts). */
export interface ScoreListener {
  onScoreFrame(nodeId: string, frame: ScoreFrame): void
}

/** What the scheduler needs of a node, wherever its socket lives. */
export interface NodeHandle {
  readonly nodeId: string
  readonly open: boolean
  readonly helloed: boolean
  readonly freeSlots: number
  /** Jobs this process's scheduler has given the node and not yet seen end. */
  readonly jobs: Set<string>
  /** Until then the node counts as full (it said so, e.g. while a cancelled job winds down). */
  fullUntil: number
  send(frame: ServerToNodeFrame): boolean
}

export interface RegistryListener {
  onJobFrame(nodeId: string, frame: JobFrame): void
  onNodeGone(nodeId: string): void
  /** Capacity may have appeared (hello, freed slot, a model started serving). */
  onCapacity(): void
}

export class NodeSession implements NodeHandle {
  maxJobs = 1
  busyJobs = 0
  helloed = false
  lastFrameAt = Date.now()
  /** Jobs the scheduler has given this node and not yet seen end. */
  readonly jobs = new Set<string>()
  /** Jobs other coordinator processes have given this node through the relay. */
  readonly relayedJobs = new Set<string>()
  lastDesired = ''
  /** The node models its last desired state named (null until one was loaded): a model_status
   * naming any other id is not its own and costs no read (node-registry.ts). */
  modelIds: ReadonlySet<string> | null = null
  chain: Promise<void> = Promise.resolve()
  /** Reports queued on `chain` and not yet written, by what they report (node-registry.ts). */
  readonly unwritten = new Map<string, () => Promise<void>>()
  /** When each kind of report was last queued for writing. */
  private reportAt = new Map<string, number>()

  /**
   * How long a report of `key` waits before it is queued: one of each kind (its hello, its status,
   * one model's status) at most every REPORT_GAP_MS (the agent sends download progress at most 4
   * times a second), so a node changing one without a pause costs 4 writes a second, not one per
   * database round trip.
   */
  reportWait(key: string): number {
    const now = Date.now()
    const at = Math.max(now, (this.reportAt.get(key) ?? -Infinity) + REPORT_GAP_MS)
    this.reportAt.set(key, at)
    return at - now
  }
  /** The backend class the node's hello reported. */
  backend = 'unknown'
  /** The node said it is shutting down: its jobs finish, it gets no new ones. */
  draining = false
  /** The status last written to the node's row, and when (Date.now): heartbeats that change
   * neither the status nor a stale `last_seen` write nothing (node-registry.ts). */
  written: { status: string; at: number } | null = null
  /** What the node's last hello wrote to its row (JSON): the same hello again writes nothing. */
  helloWritten = ''
  /** Scaled out: this socket's claim of the node (node-relay.ts), and whether it came back over
   * the bus, i.e. whether a claim by another process is newer than this one. */
  readonly claim = randomUUID()
  claimHeard = false
  /** Scaled out: when the node was last announced to the other processes, and the announcement
   * waiting for its turn (node-relay.ts). */
  announcedAt = 0
  announceTimer: NodeJS.Timeout | null = null

  constructor(
    readonly nodeId: string,
    readonly ws: WebSocket,
  ) {}

  get open(): boolean {
    return this.ws.readyState === 1
  }

  fullUntil = 0

  get freeSlots(): number {
    if (!this.helloed || !this.open || this.draining || Date.now() < this.fullUntil) return 0
    return Math.max(0, this.maxJobs - this.jobs.size - this.relayedJobs.size)
  }

  send(frame: ServerToNodeFrame): boolean {
    if (!this.open) return false
    this.ws.send(JSON.stringify(frame))
    if (this.ws.bufferedAmount > NODE_SEND_BUFFER_LIMIT) {
      log.warn(
        { nodeId: this.nodeId, buffered: this.ws.bufferedAmount },
        'a node not reading its socket is disconnected',
      )
      closeWith(this.ws, NODE_NOT_READING_CLOSE_CODE, 'Not reading its socket')
    }
    return true
  }
}

/** Least time between two writes of one kind of a node's reports (reportWait). */
export const REPORT_GAP_MS = 250

const NODE_REPLACED_REASON = 'Replaced by a newer connection of this node'

/** Closes a replaced socket with its code; one that does not answer the close is cut a second
 * later (ws would wait 30 s), so a loop of connections leaves no sockets behind. */
export function closeReplaced(ws: WebSocket): void {
  closeWith(ws, NODE_REPLACED_CLOSE_CODE, NODE_REPLACED_REASON)
}

/** Closes a node socket with `code`, and cuts it a second later if the close is not answered. */
function closeWith(ws: WebSocket, code: number, reason: string): void {
  ws.close(code, reason)
  setTimeout(() => ws.terminate(), 1000).unref()
}
