/**
 * @module Meshwork's collections (product spec section 3) with their access rules. The rule table
 * is documented in docs/access-rules.md; keep the two in step.
 */
import { REQUEST_STATUSES } from '@meshwork/protocol'
import { CREDIT_SCALE } from '../ledger/credits.ts'
import { txTypeNames } from '../ledger/tx-types.ts'
import type { CollectionDef, FieldDef } from './collection-def.ts'

const signedIn = "@request.auth.id != ''"
const ownUser = 'user = @request.auth.id'

const timestamps: FieldDef[] = [
  { name: 'created', type: 'autodate', onCreate: true },
  { name: 'updated', type: 'autodate', onCreate: true, onUpdate: true },
]

const users: CollectionDef = {
  id: '_pb_users_auth_',
  name: 'users',
  type: 'auth',
  fields: [
    { name: 'email', type: 'email', required: true },
    { name: 'emailVisibility', type: 'bool' },
    { name: 'verified', type: 'bool' },
    { name: 'password', type: 'password', hidden: true, required: true, min: 8, max: 71 },
    { name: 'tokenKey', type: 'text', hidden: true, system: true },
    { name: 'name', type: 'text', max: 255 },
    ...timestamps,
  ],
  listRule: 'id = @request.auth.id',
  viewRule: 'id = @request.auth.id',
  createRule: '',
  updateRule: 'id = @request.auth.id',
  deleteRule: 'id = @request.auth.id',
}

const userBalances: CollectionDef = {
  id: 'pbc_user_balances',
  name: 'user_balances',
  type: 'base',
  fields: [
    { name: 'user', type: 'relation', collection: 'users', required: true, cascadeDelete: true },
    { name: 'balance', type: 'number', scale: CREDIT_SCALE },
    { name: 'held', type: 'number', scale: CREDIT_SCALE },
    { name: 'total_earned', type: 'number', scale: CREDIT_SCALE },
    { name: 'total_spent', type: 'number', scale: CREDIT_SCALE },
    // Earned by the user's nodes on probation, not yet paid (docs/verification.md).
    { name: 'pending_earnings', type: 'number', scale: CREDIT_SCALE, system: true },
    ...timestamps,
  ],
  listRule: ownUser,
  viewRule: ownUser,
  createRule: null,
  updateRule: null,
  deleteRule: null,
}

const userCreditTxs: CollectionDef = {
  id: 'pbc_user_credit_txs',
  name: 'user_credit_txs',
  type: 'base',
  fields: [
    // No cascade: deleting an account closes it (a final row) and detaches its rows, never deletes them.
    { name: 'user', type: 'relation', collection: 'users', required: true },
    { name: 'type', type: 'select', required: true, values: txTypeNames },
    { name: 'amount', type: 'number', scale: CREDIT_SCALE },
    { name: 'balance_after', type: 'number', scale: CREDIT_SCALE },
    { name: 'request', type: 'relation', collection: 'requests' },
    { name: 'description', type: 'text' },
    ...timestamps,
  ],
  listRule: ownUser,
  viewRule: ownUser,
  createRule: null,
  updateRule: null,
  deleteRule: null,
}

const conversations: CollectionDef = {
  id: 'pbc_conversations',
  name: 'conversations',
  type: 'base',
  ownerField: 'user',
  fields: [
    {
      name: 'user',
      type: 'relation',
      collection: 'users',
      required: true,
      cascadeDelete: true,
      immutable: true,
    },
    { name: 'model', type: 'relation', collection: 'models' },
    { name: 'title', type: 'text', max: 255, default: 'New Chat' },
    // Each conversation has its own temperature (spec section 1); sends fall back to it.
    { name: 'temperature', type: 'number', min: 0, max: 2, default: 0.7 },
    { name: 'message_count', type: 'number', system: true },
    // Set to `created` on create, then to each send's time: the sidebar's -last_message_at order.
    { name: 'last_message_at', type: 'date', system: true },
    ...timestamps,
  ],
  listRule: ownUser,
  viewRule: ownUser,
  createRule: `${signedIn} && ${ownUser}`,
  updateRule: ownUser,
  deleteRule: ownUser,
}

const requests: CollectionDef = {
  id: 'pbc_requests',
  name: 'requests',
  type: 'base',
  ownerRule: ownUser,
  fields: [
    { name: 'user', type: 'relation', collection: 'users', required: true, private: true },
    {
      name: 'conversation',
      type: 'relation',
      collection: 'conversations',
      cascadeDelete: true,
      private: true,
    },
    { name: 'prompt', type: 'text', private: true },
    { name: 'model', type: 'relation', collection: 'models' },
    {
      name: 'status',
      type: 'select',
      values: [...REQUEST_STATUSES],
      default: 'pending',
    },
    { name: 'context_length', type: 'number', default: 8000 },
    { name: 'temperature', type: 'number' },
    { name: 'top_p', type: 'number' },
    { name: 'top_k', type: 'number' },
    { name: 'repeat_penalty', type: 'number' },
    { name: 'frequency_penalty', type: 'number' },
    { name: 'presence_penalty', type: 'number' },
    { name: 'tokens_input', type: 'number' },
    { name: 'tokens_output', type: 'number' },
    { name: 'processing_time_ms', type: 'number' },
    { name: 'response', type: 'text', private: true },
    { name: 'node', type: 'relation', collection: 'nodes' },
    { name: 'error_message', type: 'text', private: true },
    { name: 'can_retry', type: 'bool', private: true },
    { name: 'is_partial', type: 'bool' },
    { name: 'reserved', type: 'number', private: true, scale: CREDIT_SCALE },
    // Credits actually charged, set at settlement (0 for failed, cancelled and own-node requests).
    { name: 'cost', type: 'number', private: true, system: true, scale: CREDIT_SCALE },
    // Made through an API key (issue 10): such requests have no conversation.
    { name: 'api_key', type: 'relation', collection: 'api_keys', private: true },
    // A regenerated answer: the request that replaced it. History and prompts leave it out.
    { name: 'replaced_by', type: 'relation', collection: 'requests', private: true },
    ...timestamps,
  ],
  listRule: signedIn,
  viewRule: signedIn,
  createRule: null,
  updateRule: null,
  deleteRule: null,
}

/**
 * API keys (issue 10), created and revoked through `/api/keys` only. The owner may read them (the
 * Profile's history names the key a request was made with); the secret's hash is never shown.
 */
const apiKeys: CollectionDef = {
  id: 'pbc_api_keys',
  name: 'api_keys',
  type: 'base',
  fields: [
    { name: 'user', type: 'relation', collection: 'users', required: true, cascadeDelete: true },
    { name: 'name', type: 'text', max: 100 },
    { name: 'hint', type: 'text' },
    { name: 'key_hash', type: 'text', hidden: true },
    { name: 'spend_limit', type: 'number' },
    { name: 'last_used', type: 'date' },
    { name: 'revoked', type: 'date' },
    ...timestamps,
  ],
  listRule: ownUser,
  viewRule: ownUser,
  createRule: null,
  updateRule: null,
  deleteRule: null,
}

const config: CollectionDef = {
  id: 'pbc_config',
  name: 'config',
  type: 'base',
  fields: [
    { name: 'default_temperature', type: 'number', default: 0.7 },
    { name: 'default_top_p', type: 'number', default: 0.9 },
    { name: 'default_top_k', type: 'number', default: 40 },
    { name: 'default_repeat_penalty', type: 'number', default: 1.1 },
    { name: 'default_frequency_penalty', type: 'number', default: 0 },
    { name: 'default_presence_penalty', type: 'number', default: 0 },
    ...timestamps,
  ],
  listRule: signedIn,
  viewRule: signedIn,
  createRule: null,
  updateRule: null,
  deleteRule: null,
}

const models: CollectionDef = {
  id: 'pbc_models',
  name: 'models',
  type: 'base',
  fields: [
    { name: 'name', type: 'text', required: true },
    { name: 'display_name', type: 'text' },
    { name: 'description', type: 'text' },
    { name: 'file_name', type: 'text' },
    { name: 'file_size_bytes', type: 'number' },
    // Shown and used for memory checks until file_size_bytes is pinned (migration 0070).
    { name: 'approx_size_bytes', type: 'number' },
    { name: 'source_url', type: 'text' },
    { name: 'sha256', type: 'text' },
    { name: 'credit_multiplier', type: 'number', default: 1, scale: CREDIT_SCALE },
    { name: 'is_active', type: 'bool', default: true },
    { name: 'sort_order', type: 'number' },
    ...timestamps,
  ],
  listRule: signedIn,
  viewRule: signedIn,
  createRule: null,
  updateRule: null,
  deleteRule: null,
}

const availableModels: CollectionDef = {
  id: 'pbc_available_models',
  name: 'available_models',
  // A database view (migration 0001): one row per active catalogue model with the live count of
  // online, active nodes serving it.
  type: 'view',
  fields: [
    { name: 'name', type: 'text' },
    { name: 'display_name', type: 'text' },
    { name: 'description', type: 'text' },
    { name: 'credit_multiplier', type: 'number', scale: CREDIT_SCALE },
    { name: 'sort_order', type: 'number' },
    { name: 'node_count', type: 'number' },
  ],
  listRule: signedIn,
  viewRule: signedIn,
  createRule: null,
  updateRule: null,
  deleteRule: null,
}

const nodes: CollectionDef = {
  id: 'pbc_nodes',
  name: 'nodes',
  type: 'base',
  ownerRule: ownUser,
  fields: [
    {
      name: 'user',
      type: 'relation',
      collection: 'users',
      required: true,
      system: true,
      cascadeDelete: true,
    },
    { name: 'device_name', type: 'text', required: true, max: 100, default: 'Unknown' },
    {
      name: 'status',
      type: 'select',
      values: ['online', 'busy', 'offline'],
      default: 'offline',
      system: true,
    },
    { name: 'total_requests', type: 'number', system: true },
    { name: 'reputation_score', type: 'number', default: 5, system: true },
    { name: 'is_active', type: 'bool', default: true },
    { name: 'last_seen', type: 'date', system: true },
    { name: 'hardware', type: 'json', system: true },
    { name: 'agent_version', type: 'text', system: true },
    { name: 'max_jobs', type: 'number', default: 1, system: true },
    // What the coordinator knows about the node for itself (docs/verification.md).
    { name: 'backend', type: 'text', system: true },
    { name: 'engine_version', type: 'text', system: true },
    { name: 'trusted', type: 'bool', system: true },
    {
      name: 'verification',
      type: 'select',
      values: ['probation', 'verified', 'trusted'],
      default: 'probation',
      system: true,
    },
    { name: 'canaries_passed', type: 'number', system: true },
    { name: 'canaries_failed', type: 'number', system: true },
    { name: 'benched_until', type: 'date', system: true },
    // Earned on probation and held until the node is verified (or returned if it is caught).
    { name: 'pending_earnings', type: 'number', scale: CREDIT_SCALE, system: true, private: true },
    // A node's own words (job errors) reach its owner only, never other users.
    { name: 'last_error', type: 'text', system: true, private: true },
    { name: 'last_error_at', type: 'date', system: true, private: true },
    ...timestamps,
  ],
  listRule: signedIn,
  viewRule: signedIn,
  createRule: null,
  updateRule: ownUser,
  deleteRule: ownUser,
}

const ownNode = 'node.user = @request.auth.id'

const nodeModels: CollectionDef = {
  id: 'pbc_node_models',
  name: 'node_models',
  type: 'base',
  ownerRule: ownNode,
  fields: [
    {
      name: 'node',
      type: 'relation',
      collection: 'nodes',
      required: true,
      cascadeDelete: true,
      immutable: true,
    },
    { name: 'model', type: 'relation', collection: 'models', required: true, immutable: true },
    { name: 'requested_download', type: 'bool', private: true },
    { name: 'requested_serving', type: 'bool', private: true },
    // The owner's 'Retry now' for a failed download or load (migration 0020).
    { name: 'retry_requested_at', type: 'date', private: true },
    { name: 'is_downloaded', type: 'bool', system: true },
    { name: 'is_serving', type: 'bool', system: true },
    // As the node reports it: shown to its owner, never used to route.
    { name: 'tokens_per_second', type: 'number', system: true, private: true },
    // Output tokens per second the coordinator relayed on this node's real jobs.
    { name: 'measured_tokens_per_second', type: 'number', system: true },
    { name: 'download_progress', type: 'text', system: true, private: true },
    { name: 'error_message', type: 'text', system: true, private: true },
    ...timestamps,
  ],
  // Other users see only what the Network screen shows: which models a node serves.
  listRule: `${ownNode} || (${signedIn} && is_serving = true)`,
  viewRule: `${ownNode} || (${signedIn} && is_serving = true)`,
  createRule: ownNode,
  updateRule: ownNode,
  deleteRule: ownNode,
}

const nodeJobs: CollectionDef = {
  id: 'pbc_node_jobs',
  name: 'node_jobs',
  type: 'base',
  ownerRule: ownNode,
  fields: [
    {
      name: 'request',
      type: 'relation',
      collection: 'requests',
      cascadeDelete: true,
      private: true,
    },
    { name: 'node', type: 'relation', collection: 'nodes', private: true },
    {
      name: 'status',
      type: 'select',
      values: ['pending', 'acked', 'completed', 'failed', 'cancelled'],
      default: 'pending',
    },
    ...timestamps,
  ],
  listRule: signedIn,
  viewRule: signedIn,
  createRule: null,
  updateRule: null,
  deleteRule: null,
}

/** Every collection, in dependency order (relations point to earlier entries or to themselves). */
export const collections: CollectionDef[] = [
  users,
  models,
  config,
  nodes,
  nodeModels,
  conversations,
  apiKeys,
  requests,
  nodeJobs,
  userBalances,
  userCreditTxs,
  availableModels,
]
