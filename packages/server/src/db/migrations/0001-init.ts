/**
 * @module The initial schema: every collection of the product spec (section 3) plus the server's
 * private tables. Frozen once released: later changes go in new migrations.
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'
import { createIndex, createTable, createView, type ColumnSpec } from '../ddl.ts'

const created: ColumnSpec[] = [
  ['created', 'text'],
  ['updated', 'text'],
]

export const init: Migration = {
  async up(db: Db) {
    await createTable(db, 'users', [
      ['email', 'text'],
      ['emailVisibility', 'bool'],
      ['verified', 'bool'],
      ['password', 'text'],
      ['tokenKey', 'text'],
      ['name', 'text'],
      ...created,
    ])
    await createIndex(db, 'users', ['email'], true)

    await createTable(db, 'models', [
      ['name', 'text'],
      ['display_name', 'text'],
      ['description', 'text'],
      ['file_name', 'text'],
      ['file_size_bytes', 'number'],
      ['source_url', 'text'],
      ['sha256', 'text'],
      ['credit_multiplier', 'number'],
      ['is_active', 'bool'],
      ['sort_order', 'number'],
      ...created,
    ])
    await createIndex(db, 'models', ['name'], true)

    await createTable(db, 'config', [
      ['default_temperature', 'number'],
      ['default_top_p', 'number'],
      ['default_top_k', 'number'],
      ['default_repeat_penalty', 'number'],
      ['default_frequency_penalty', 'number'],
      ['default_presence_penalty', 'number'],
      ...created,
    ])

    await createTable(db, 'nodes', [
      ['user', 'text'],
      ['device_name', 'text'],
      ['status', 'text'],
      ['total_requests', 'number'],
      ['reputation_score', 'number'],
      ['is_active', 'bool'],
      ['last_seen', 'text'],
      ['hardware', 'json'],
      ['agent_version', 'text'],
      ['max_jobs', 'number'],
      ...created,
    ])
    await createIndex(db, 'nodes', ['user'])

    await createTable(db, 'node_models', [
      ['node', 'text'],
      ['model', 'text'],
      ['requested_download', 'bool'],
      ['requested_serving', 'bool'],
      ['is_downloaded', 'bool'],
      ['is_serving', 'bool'],
      ['tokens_per_second', 'number'],
      ['download_progress', 'text'],
      ['error_message', 'text'],
      ...created,
    ])
    await createIndex(db, 'node_models', ['node', 'model'], true)
    await createIndex(db, 'node_models', ['model'])

    await createTable(db, 'conversations', [
      ['user', 'text'],
      ['model', 'text'],
      ['title', 'text'],
      ['message_count', 'number'],
      ['last_message_at', 'text'],
      ...created,
    ])
    // Serves the chat sidebar's `user = X` sorted -last_message_at,-created without a sort step.
    await createIndex(db, 'conversations', ['user', 'last_message_at', 'created', 'id'])

    await createTable(db, 'requests', [
      ['user', 'text'],
      ['conversation', 'text'],
      ['prompt', 'text'],
      ['model', 'text'],
      ['status', 'text'],
      ['context_length', 'number'],
      ['temperature', 'number'],
      ['top_p', 'number'],
      ['top_k', 'number'],
      ['repeat_penalty', 'number'],
      ['frequency_penalty', 'number'],
      ['presence_penalty', 'number'],
      ['tokens_input', 'number'],
      ['tokens_output', 'number'],
      ['processing_time_ms', 'number'],
      ['response', 'text'],
      ['node', 'text'],
      ['error_message', 'text'],
      ['can_retry', 'bool'],
      ['is_partial', 'bool'],
      ['reserved', 'number'],
      ...created,
    ])
    await createIndex(db, 'requests', ['conversation', 'created', 'id'])
    await createIndex(db, 'requests', ['user', 'created'])
    await createIndex(db, 'requests', ['created'])

    await createTable(db, 'node_jobs', [
      ['request', 'text'],
      ['node', 'text'],
      ['status', 'text'],
      ...created,
    ])
    await createIndex(db, 'node_jobs', ['request'])
    await createIndex(db, 'node_jobs', ['created'])

    await createTable(db, 'user_balances', [
      ['user', 'text'],
      ['balance', 'number'],
      ['held', 'number'],
      ['total_earned', 'number'],
      ['total_spent', 'number'],
      ...created,
    ])
    await createIndex(db, 'user_balances', ['user'], true)

    await createTable(db, 'user_credit_txs', [
      ['user', 'text'],
      ['type', 'text'],
      ['amount', 'number'],
      ['balance_after', 'number'],
      ['request', 'text'],
      ['description', 'text'],
      ...created,
    ])
    await createIndex(db, 'user_credit_txs', ['user', 'created', 'id'])
    // A request is settled at most once: one debit and one credit row per request.
    await createIndex(db, 'user_credit_txs', ['request', 'type'])

    await createView(
      db,
      'available_models',
      `SELECT m.id AS id, m.name AS name, m.display_name AS display_name,
        m.description AS description, m.credit_multiplier AS credit_multiplier, m.sort_order AS sort_order,
        (SELECT COUNT(*) FROM node_models nm JOIN nodes n ON n.id = nm.node
          WHERE nm.model = m.id AND nm.is_serving = 1 AND n.is_active = 1
            AND n.status IN ('online', 'busy')) AS node_count
        FROM models m WHERE m.is_active = 1`,
    )

    // Server-private tables: never exposed as collections.
    await createTable(db, '_node_credentials', [
      ['node', 'text'],
      ['secret_hash', 'text'],
      ['revoked', 'bool'],
      ...created,
    ])
    await createIndex(db, '_node_credentials', ['node'])
    await createTable(db, '_link_flows', [
      ['state_token', 'text'],
      ['device_secret_hash', 'text'],
      ['device_name', 'text'],
      ['status', 'text'],
      ['user', 'text'],
      ['node', 'text'],
      ['credential', 'text'],
      ['error', 'text'],
      ['expires_at', 'text'],
      ...created,
    ])
    await createIndex(db, '_link_flows', ['state_token'], true)
    await db.schema
      .createTable('_settings')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute()
  },
}
