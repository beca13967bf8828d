/** @module Record shapes the chat screen reads (spec §3) and the client's model view. */
import {
  isEndedRequestStatus,
  type RequestStatus as KnownStatus,
} from '@meshwork/protocol/request-status'

export interface ConversationRecord {
  id: string
  user: string
  model: string
  title: string
  /** The conversation's own temperature (0 to 2; spec section 1). */
  temperature?: number
  message_count: number
  last_message_at: string
  created: string
  updated: string
}

/** The protocol's statuses (`cancelled`: stopped, its text so far kept); any other string is
 * tolerated from an older or newer server. */
export type RequestStatus = KnownStatus | (string & {})

export interface RequestRecord {
  id: string
  conversation: string
  prompt: string
  model: string
  status: RequestStatus
  response: string
  tokens_input: number
  tokens_output: number
  error_message: string
  can_retry: boolean
  is_partial: boolean
  temperature?: number
  /** Set when a regenerated answer replaced this one (then it leaves the history). */
  replaced_by?: string
  /** Credits actually charged, when the server reports them. */
  cost?: number
  created: string
  updated?: string
}

export interface AvailableModelRecord {
  id: string
  name: string
  display_name?: string
  description?: string
  credit_multiplier?: number | null
  node_count?: number | null
  sort_order?: number
}

/** The client's model entry (spec §3 available_models mapping). */
export interface ChatModel {
  id: string
  name: string
  description: string
  creditMultiplier: number
  nodeCount: number
  isAvailable: boolean
  /** File size from the catalogue, when known (shown in GB). */
  sizeBytes?: number
}

export function toChatModel(record: AvailableModelRecord): ChatModel {
  const name = record.display_name || record.name
  const nodeCount = record.node_count ?? 0
  return {
    id: record.id,
    name,
    description: record.description || `AI model: ${name}`,
    creditMultiplier: record.credit_multiplier ?? 1,
    nodeCount,
    isAvailable: nodeCount > 0,
  }
}

/** 'No nodes' label text: singular or plural. */
export function nodeCountLabel(count: number): string {
  return count === 1 ? '1 node' : `${count} nodes`
}

/** Request states that end a stream. */
export function isTerminal(status: RequestStatus): boolean {
  return isEndedRequestStatus(status)
}

/**
 * Whether a record arriving later (a realtime event, a read) should replace the one held. A
 * stream's late partial event must not undo its final state, but a retry (the same id, pending
 * again, written later) must.
 */
export function isNewer(incoming: RequestRecord, current: RequestRecord | undefined): boolean {
  if (!current) return true
  if (!isTerminal(current.status) || isTerminal(incoming.status)) return true
  return (incoming.updated ?? '') > (current.updated ?? '')
}
