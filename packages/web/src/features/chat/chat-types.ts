/** @module Record shapes the chat screen reads (spec §3) and the client's model view. */

export interface ConversationRecord {
  id: string
  user: string
  model: string
  title: string
  message_count: number
  last_message_at: string
  created: string
  updated: string
}

export type RequestStatus = 'pending' | 'processing' | 'completed' | 'failed' | (string & {})

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
  created: string
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
  return status === 'completed' || status === 'failed' || status === 'cancelled'
}
