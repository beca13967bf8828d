/**
 * @module The scheduler's vocabulary: its options and defaults, the request it is given (a work
 * item) and what it keeps about it while it runs.
 */
import type { JobOfferFrame, NodeToServerFrame } from '@meshwork/protocol'
import type { Row } from '../records/serialize.ts'
import type { CoalescedPublisher } from './coalesced-publisher.ts'

export interface SchedulerOptions {
  /** Minimum time between two partial-response publishes of one request (~20/s). */
  streamIntervalMs: number
  /** A running job with no frame for this long is given to another node. */
  stallMs: number
  /** An offer not accepted within this long is given to another node. */
  offerTimeoutMs: number
  /** Nodes tried per request before it fails. */
  maxAttempts: number
}

export const defaultSchedulerOptions: SchedulerOptions = {
  streamIntervalMs: 50,
  stallMs: 30_000,
  offerTimeoutMs: 10_000,
  maxAttempts: 3,
}

/** The agent's reason for an offer beyond its free slots (REJECT_NO_SLOT in @meshwork/node). */
export const NO_SLOT_REASON = 'No free job slot'
export const MAX_OFFERS = 10
export const FULL_NODE_PAUSE_MS = 250

export const NO_NODE_MESSAGE =
  'No node is available to process this request. Please try again later.'

/** What the scheduler needs to run one request. */
export interface WorkItem {
  requestId: string
  user: string
  modelId: string
  estimatedInput: number
  maxTokens: number
  prompt: JobOfferFrame['prompt']
  sampling: JobOfferFrame['sampling']
}

export interface Work extends WorkItem {
  tried: Set<string>
  /** Offers made, rejections for a full node included. */
  offers: number
  job: { id: string; nodeId: string; acked: boolean; lastActivity: number } | null
  text: string
  lastError: string
  publisher: CoalescedPublisher | null
  row: Row | null
  chain: Promise<void>
}

export type JobFrame = Extract<NodeToServerFrame, { job_id: string }>
