/**
 * @module The scheduler's vocabulary: its options and defaults, the request it is given (a work
 * item) and what it keeps about it while it runs (a work, and the job out on a node).
 */
import type { JobOfferFrame, NodeToServerFrame } from '@meshwork/protocol'
import { AnswerMeter, type MeteredAnswer, type MeterRule } from '../metering/answer-meter.ts'
import type { Row } from '../records/serialize.ts'
import type { CoalescedPublisher } from './coalesced-publisher.ts'
import {
  defaultDeadlineOptions,
  expectedJobSpeed,
  jobDeadlineMs,
  type DeadlineOptions,
} from './job-deadline.ts'
import { JOB_REJECT_REASONS } from '@meshwork/protocol'
import { RUNNING_CHECK_MS } from './running-check.ts'

export interface SchedulerOptions {
  /** Minimum time between two partial-response publishes of one request (~20/s). */
  streamIntervalMs: number
  /** A running job with no frame for this long is given to another node. */
  stallMs: number
  /** An offer not accepted within this long is given to another node. */
  offerTimeoutMs: number
  /** Nodes tried per request before it fails. */
  maxAttempts: number
  /** A job's overall deadline (job-deadline.ts): the floor speed and the grace. */
  deadline: DeadlineOptions
  /** Share of requests offered first to a free node on probation (new, not yet verified). */
  probationShare: number
  /** How long a canary waits for its node to have a free slot before it is dropped. */
  canaryWaitMs: number
  /**
   * How long a request waits when every node that could run it is between connections: the
   * database still counts it online, but no process holds its socket (its coordinator drained or
   * died, and the agent is reconnecting through the balancer). It fails retryable after that.
   */
  reconnectWaitMs: number
  /** How often the requests this process has are checked against the database (running-check.ts). */
  runningCheckMs: number
  random: () => number
}

export const defaultSchedulerOptions: SchedulerOptions = {
  streamIntervalMs: 50,
  stallMs: 30_000,
  offerTimeoutMs: 10_000,
  maxAttempts: 3,
  deadline: defaultDeadlineOptions,
  probationShare: 0.1,
  canaryWaitMs: 60_000,
  // The agent's backoff starts at 0.5 s and grows to 10 s.
  reconnectWaitMs: 10_000,
  runningCheckMs: RUNNING_CHECK_MS,
  random: Math.random,
}

/** The agent's reason for an offer beyond its free slots: that node is asked again later. */
export const NO_SLOT_REASON = JOB_REJECT_REASONS.noSlot
export const MAX_OFFERS = 10
/** Why a request was not run by a process that shut down (no other process could take it). */
export const DRAIN_REASON = 'The coordinator shut down'
export const FULL_NODE_PAUSE_MS = 250
/**
 * An offer made within this long of the last "full" answer continues an unbroken run of them (a
 * node is asked again FULL_NODE_PAUSE_MS after each). Measured from answer to next offer, so a
 * node cannot break the run by taking its time to answer. An honest node's "full" heard through a
 * stale count (scaled out) lasts until the next heartbeat: after it the request waits without
 * offers, for 5 s at least, until a slot is announced free.
 */
export const FULL_RUN_GAP_MS = 2_000

export const NO_NODE_MESSAGE =
  'No node is available to process this request. Please try again later.'

/**
 * Why a node's attempt ended, in the coordinator's own words: users see these (in brackets after
 * NO_NODE_MESSAGE), never a node's text, which goes to the node's owner only.
 */
export const ATTEMPT_ENDED = {
  offline: 'The node went offline',
  stalled: 'The node stopped responding',
  slow: 'The node took too long',
  failed: 'The node could not run the request',
  rejected: 'The node turned the request down',
  full: NO_SLOT_REASON,
  loading: 'The node is still loading the model',
} as const

/**
 * Offers turned down for no fault of the node, which is asked again a moment later, by the node's
 * reason, with what its request's user may read: no free slot, or the model not loaded yet. An
 * agent back from a restart says hello before its model is loaded again, while its stored state
 * still says serving, and its first offers came then: held against it, they failed its requests
 * and benched it (npm run chaos killing agents). A node saying so for ever is bounded as a "full"
 * one is (full-node.ts).
 */
export const ASK_AGAIN_LATER: ReadonlyMap<string, string> = new Map([
  [NO_SLOT_REASON, ATTEMPT_ENDED.full],
  [JOB_REJECT_REASONS.notServing, ATTEMPT_ENDED.loading],
])

/**
 * A canary (verification/canaries.ts): offered to one node only, never to another, paid by nobody;
 * its answer goes to `done` instead of the settlement.
 */
export interface CanaryTarget {
  nodeId: string
  /** The answer as metered, when the node finished; null when the attempt ended otherwise. */
  done(answer: MeteredAnswer | null, processingTimeMs: number): Promise<void>
}

/** What the scheduler needs to run one request. */
export interface WorkItem {
  requestId: string
  user: string
  modelId: string
  /** Input tokens as counted (the hold was sized from them). */
  estimatedInput: number
  maxTokens: number
  /** The model's multiplier and the request's hold, in credit units (what a deleted request's
   * streamed part may be charged). */
  multiplierUnits: number
  reservedUnits: number
  prompt: JobOfferFrame['prompt']
  sampling: JobOfferFrame['sampling']
  /** How this model's answers are metered. */
  meterRule: MeterRule
  canary?: CanaryTarget
}

export interface Job {
  id: string
  nodeId: string
  owner: string
  acked: boolean
  acceptedAt: number
  /** Last frame that moved the job on (accepted, text); empty chunks do not count. */
  lastActivity: number
  /** Date.now() past which the job is taken from its node, whatever it sends. */
  deadline: number
  meter: AnswerMeter
}

export interface Work extends WorkItem {
  tried: Set<string>
  /** Owners whose node failed this request: the next attempt goes to someone else's node. */
  triedOwners: Set<string>
  /** Offers made, not counting those a node answered "full" (full-node.ts). */
  offers: number
  queuedAt: number
  job: Job | null
  lastError: string
  publisher: CoalescedPublisher | null
  row: Row | null
  chain: Promise<void>
  /** Completed, failed or cancelled: its last writes are under way (or done). */
  ending: boolean
  /** Since when (Date.now) it has waited for nodes that are between connections; null if not. */
  awaySince: number | null
  /** Its unbroken run of "full" answers (full-node.ts): the first such offer, the last answer. */
  fullRun: { since: number; last: number } | null
}

/** A request as the scheduler keeps it, just queued. `row`: as its send stored it, if known. */
export function newWork(item: WorkItem, row: Row | null): Work {
  return {
    ...item,
    tried: new Set(),
    triedOwners: new Set(),
    offers: 0,
    queuedAt: Date.now(),
    job: null,
    lastError: '',
    publisher: null,
    row,
    chain: Promise.resolve(),
    ending: false,
    awaySince: null,
    fullRun: null,
  }
}

/** The job `id` of `work` offered now to `nodeId` of `owner`, whose speed the coordinator
 * measured (0: not yet); its deadline is from the request's budget (job-deadline.ts). */
export function newJob(
  work: Work,
  id: string,
  nodeId: string,
  node: { owner: string; speed: number },
  deadline: DeadlineOptions,
): Job {
  const budget = { inputTokens: work.estimatedInput, outputTokens: work.maxTokens }
  // Held to the speed the coordinator measured on the node's real jobs, never its own claim.
  const speed = expectedJobSpeed(node.speed, deadline)
  const now = Date.now()
  return {
    id,
    nodeId,
    owner: node.owner,
    acked: false,
    acceptedAt: now,
    lastActivity: now,
    deadline: now + jobDeadlineMs(budget, speed, deadline),
    meter: new AnswerMeter(work.maxTokens, work.meterRule, work.sampling.stop ?? []),
  }
}

export type JobFrame = Extract<NodeToServerFrame, { job_id: string }>

/** Starts or goes on with a wait for nodes that are between connections; true once it is over. */
export function awayWaitOver(work: Work, waitMs: number): boolean {
  const now = Date.now()
  work.awaySince ??= now
  return now - work.awaySince >= waitMs
}
