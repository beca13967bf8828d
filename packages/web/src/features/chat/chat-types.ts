/** @module The records the chat screen reads (spec §3; declared in `@meshwork/protocol/records`)
 * and the client's model view. */
import type * as Records from '@meshwork/protocol/records'
import {
  isEndedRequestStatus,
  type RequestStatus as KnownStatus,
} from '@meshwork/protocol/request-status'
import type { ModelSize } from '../../lib/model-size.ts'

/** The protocol's statuses (`cancelled`: stopped, its text so far kept); any other string is
 * tolerated from an older or newer server. */
export type RequestStatus = KnownStatus | (string & {})

/** The fields of a `conversations` record the chat screen reads. */
export type ConversationRecord = Pick<
  Records.ConversationRecord,
  'id' | 'user' | 'model' | 'title' | 'message_count' | 'last_message_at' | 'created' | 'updated'
> &
  Partial<Pick<Records.ConversationRecord, 'temperature'>>

/** The fields of one of the caller's own `requests` records (so its private fields are there)
 * the chat screen reads. */
export type RequestRecord = Pick<
  Records.RequestRecord,
  'id' | 'model' | 'tokens_input' | 'tokens_output' | 'is_partial' | 'created'
> &
  Required<
    Pick<
      Records.RequestRecord,
      'conversation' | 'prompt' | 'response' | 'error_message' | 'can_retry'
    >
  > &
  Partial<Pick<Records.RequestRecord, 'temperature' | 'replaced_by' | 'cost' | 'updated'>> & {
    status: RequestStatus
  }

/** The fields of an `available_models` record the chat screen reads. */
export type AvailableModelRecord = Pick<Records.AvailableModelRecord, 'id' | 'name'> &
  Partial<
    Pick<
      Records.AvailableModelRecord,
      'display_name' | 'description' | 'credit_multiplier' | 'node_count' | 'sort_order'
    >
  >

/** The client's model entry (spec §3 available_models mapping). */
export interface ChatModel {
  id: string
  name: string
  description: string
  creditMultiplier: number
  nodeCount: number
  isAvailable: boolean
  /** File size from the catalogue, when known (shown in GB). */
  size?: ModelSize | null
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
