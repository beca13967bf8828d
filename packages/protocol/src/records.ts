/**
 * @module records
 * The records the web app reads, as the coordinator's records API writes them (PocketBase's record
 * JSON: `collectionId`, `collectionName`, `id` and every field that is not hidden). One contract for
 * the coordinator's collection definitions (`packages/server/src/core/collections/schema.ts`) and
 * the web app. Plain types and key lists, no zod: the web app imports this file alone
 * (`@meshwork/protocol/records`), keeping the schemas out of its bundle.
 *
 * Beside each type, its field names: the compiler checks that the list names every key of the type
 * and nothing else, and a server test (`packages/server/test/record-types.test.ts`) that it names
 * exactly the collection's output fields, so a field added to or dropped from a collection without
 * its type here fails the build. A `private` field is optional: it is left out for callers who do
 * not own the record. Relations are record ids (`''` when empty); dates are PocketBase date strings
 * (`''` when empty); credit amounts are in credits.
 */
import type { RequestStatus } from './request-status.ts'

/** Every key of T, each once: an object literal of this type must name them all and no other. */
type FieldList<T> = { readonly [K in keyof T]-?: true }

/** What every record carries besides its collection's fields. */
export interface RecordMeta {
  id: string
  collectionId: string
  collectionName: string
}

const META = { id: true, collectionId: true, collectionName: true } as const

/** The autodate fields of every base collection. */
interface Timestamps {
  created: string
  updated: string
}

const TIMESTAMPS = { created: true, updated: true } as const

/** `conversations` (spec §3). */
export interface ConversationRecord extends RecordMeta, Timestamps {
  user: string
  model: string
  title: string
  /** The conversation's own temperature (0 to 2; spec section 1). */
  temperature: number
  message_count: number
  last_message_at: string
}

const CONVERSATION_FIELDS: FieldList<ConversationRecord> = {
  ...META,
  ...TIMESTAMPS,
  user: true,
  model: true,
  title: true,
  temperature: true,
  message_count: true,
  last_message_at: true,
}

/** `requests`: one inference request (a chat message and its answer). */
export interface RequestRecord extends RecordMeta, Timestamps {
  user?: string
  conversation?: string
  prompt?: string
  model: string
  status: RequestStatus
  context_length: number
  temperature: number
  top_p: number
  top_k: number
  repeat_penalty: number
  frequency_penalty: number
  presence_penalty: number
  tokens_input: number
  tokens_output: number
  processing_time_ms: number
  response?: string
  node: string
  error_message?: string
  can_retry?: boolean
  is_partial: boolean
  reserved?: number
  /** Credits actually charged, set at settlement. */
  cost?: number
  /** Made through an API key (issue 10). */
  api_key?: string
  /** Set when a regenerated answer replaced this one (then it leaves the history). */
  replaced_by?: string
}

const REQUEST_FIELDS: FieldList<RequestRecord> = {
  ...META,
  ...TIMESTAMPS,
  user: true,
  conversation: true,
  prompt: true,
  model: true,
  status: true,
  context_length: true,
  temperature: true,
  top_p: true,
  top_k: true,
  repeat_penalty: true,
  frequency_penalty: true,
  presence_penalty: true,
  tokens_input: true,
  tokens_output: true,
  processing_time_ms: true,
  response: true,
  node: true,
  error_message: true,
  can_retry: true,
  is_partial: true,
  reserved: true,
  cost: true,
  api_key: true,
  replaced_by: true,
}

/** `user_balances`: one per user. */
export interface UserBalanceRecord extends RecordMeta, Timestamps {
  user: string
  balance: number
  /** Credits held for requests still running (spendable = balance - held). */
  held: number
  total_earned: number
  total_spent: number
  /** Earned by the user's nodes on probation, held until they are verified. */
  pending_earnings: number
}

const USER_BALANCE_FIELDS: FieldList<UserBalanceRecord> = {
  ...META,
  ...TIMESTAMPS,
  user: true,
  balance: true,
  held: true,
  total_earned: true,
  total_spent: true,
  pending_earnings: true,
}

/** `user_credit_txs`: one credit transaction (spec §9). */
export interface CreditTxRecord extends RecordMeta, Timestamps {
  user: string
  /** `credit_admin`, `debit_inference_request`, ...: kept a string, so a newer kind still shows. */
  type: string
  amount: number
  balance_after: number
  request: string
  description: string
}

const CREDIT_TX_FIELDS: FieldList<CreditTxRecord> = {
  ...META,
  ...TIMESTAMPS,
  user: true,
  type: true,
  amount: true,
  balance_after: true,
  request: true,
  description: true,
}

/** `models`: the catalogue. */
export interface ModelRecord extends RecordMeta, Timestamps {
  name: string
  display_name: string
  description: string
  file_name: string
  file_size_bytes: number
  /** The model card's approximate size, for display and memory checks until the file's is pinned. */
  approx_size_bytes: number
  source_url: string
  sha256: string
  credit_multiplier: number
  is_active: boolean
  sort_order: number
}

const MODEL_FIELDS: FieldList<ModelRecord> = {
  ...META,
  ...TIMESTAMPS,
  name: true,
  display_name: true,
  description: true,
  file_name: true,
  file_size_bytes: true,
  approx_size_bytes: true,
  source_url: true,
  sha256: true,
  credit_multiplier: true,
  is_active: true,
  sort_order: true,
}

/** `available_models` (a view): each active catalogue model with its count of serving nodes. */
export interface AvailableModelRecord extends RecordMeta {
  name: string
  display_name: string
  description: string
  credit_multiplier: number
  sort_order: number
  node_count: number
}

const AVAILABLE_MODEL_FIELDS: FieldList<AvailableModelRecord> = {
  ...META,
  name: true,
  display_name: true,
  description: true,
  credit_multiplier: true,
  sort_order: true,
  node_count: true,
}

/** The `hardware` a node reports: memory in bytes; VRAM where its GPU backend tells. */
export interface NodeHardwareInfo {
  cpu_model?: string
  cpu_cores?: number
  memory_bytes?: number
  gpu?: string | null
  vram_bytes?: number | null
}

export type NodeStatus = 'online' | 'busy' | 'offline'
export type NodeVerification = 'probation' | 'verified' | 'trusted'

/** `nodes` (spec §3, §4). */
export interface NodeRecord extends RecordMeta, Timestamps {
  user: string
  device_name: string
  status: NodeStatus
  total_requests: number
  reputation_score: number
  is_active: boolean
  last_seen: string
  /** What the node reported in its hello (null until it first connects). */
  hardware: NodeHardwareInfo | null
  agent_version: string
  max_jobs: number
  backend: string
  engine_version: string
  trusted: boolean
  /** Canary verification (docs/verification.md). */
  verification: NodeVerification
  canaries_passed: number
  canaries_failed: number
  benched_until: string
  /** Credits earned on probation, held until the node is verified (its owner sees them). */
  pending_earnings?: number
  last_error?: string
  last_error_at?: string
}

const NODE_FIELDS: FieldList<NodeRecord> = {
  ...META,
  ...TIMESTAMPS,
  user: true,
  device_name: true,
  status: true,
  total_requests: true,
  reputation_score: true,
  is_active: true,
  last_seen: true,
  hardware: true,
  agent_version: true,
  max_jobs: true,
  backend: true,
  engine_version: true,
  trusted: true,
  verification: true,
  canaries_passed: true,
  canaries_failed: true,
  benched_until: true,
  pending_earnings: true,
  last_error: true,
  last_error_at: true,
}

/** `node_models`: one model on one node; the owner's requests and the node's reports. */
export interface NodeModelRecord extends RecordMeta, Timestamps {
  node: string
  model: string
  requested_download?: boolean
  requested_serving?: boolean
  /** When the owner last pressed Retry (the node then tries again at once). */
  retry_requested_at?: string
  is_downloaded: boolean
  is_serving: boolean
  /** As the node reports it (its owner sees it). */
  tokens_per_second?: number
  /** Output tokens per second the coordinator relayed on this node's real jobs. */
  measured_tokens_per_second: number
  download_progress?: string
  error_message?: string
}

const NODE_MODEL_FIELDS: FieldList<NodeModelRecord> = {
  ...META,
  ...TIMESTAMPS,
  node: true,
  model: true,
  requested_download: true,
  requested_serving: true,
  retry_requested_at: true,
  is_downloaded: true,
  is_serving: true,
  tokens_per_second: true,
  measured_tokens_per_second: true,
  download_progress: true,
  error_message: true,
}

/** `node_jobs`: one dispatch of a request to a node. */
export interface NodeJobRecord extends RecordMeta, Timestamps {
  request?: string
  node?: string
  status: 'pending' | 'acked' | 'completed' | 'failed' | 'cancelled'
}

const NODE_JOB_FIELDS: FieldList<NodeJobRecord> = {
  ...META,
  ...TIMESTAMPS,
  request: true,
  node: true,
  status: true,
}

/** `config`: the operator's defaults (one record). */
export interface ConfigRecord extends RecordMeta, Timestamps {
  default_temperature: number
  default_top_p: number
  default_top_k: number
  default_repeat_penalty: number
  default_frequency_penalty: number
  default_presence_penalty: number
}

const CONFIG_FIELDS: FieldList<ConfigRecord> = {
  ...META,
  ...TIMESTAMPS,
  default_temperature: true,
  default_top_p: true,
  default_top_k: true,
  default_repeat_penalty: true,
  default_frequency_penalty: true,
  default_presence_penalty: true,
}

/** Each collection's field list, by collection name. */
export const RECORD_FIELDS = {
  conversations: CONVERSATION_FIELDS,
  requests: REQUEST_FIELDS,
  user_balances: USER_BALANCE_FIELDS,
  user_credit_txs: CREDIT_TX_FIELDS,
  models: MODEL_FIELDS,
  available_models: AVAILABLE_MODEL_FIELDS,
  nodes: NODE_FIELDS,
  node_models: NODE_MODEL_FIELDS,
  node_jobs: NODE_JOB_FIELDS,
  config: CONFIG_FIELDS,
} as const
