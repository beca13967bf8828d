/**
 * @module Untrusted nodes (issue 13): what the coordinator learns about a node for itself and what
 * it keeps from a node's own claims. Nodes get their backend class, engine version, the trusted
 * flag (reference nodes), verification state and counters, a bench cool-down and the last error
 * text they sent (for their owner only); node models get the speed the coordinator measured.
 * Server-private tables hold canary runs, each node's verification evidence and the per-model
 * bytes-per-token calibration used to meter answers without a tokenizer.
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'
import { createIndex, createTable, type ColumnKind, type ColumnSpec } from '../ddl.ts'

async function addColumns(db: Db, table: string, columns: ColumnSpec[]) {
  const types: Record<ColumnKind, 'text' | 'double precision' | 'integer' | 'bigint'> = {
    text: 'text',
    json: 'text',
    number: 'double precision',
    integer: 'bigint',
    bool: 'integer',
  }
  const defaults: Record<ColumnKind, string | number> = {
    text: '',
    json: 'null',
    number: 0,
    integer: 0,
    bool: 0,
  }
  for (const [name, kind] of columns) {
    await db.schema
      .alterTable(table)
      .addColumn(name, types[kind], (c) => c.notNull().defaultTo(defaults[kind]))
      .execute()
  }
}

const created: ColumnSpec[] = [
  ['created', 'text'],
  ['updated', 'text'],
]

export const nodeVerification: Migration = {
  async up(db: Db) {
    await addColumns(db, 'nodes', [
      ['trusted', 'bool'],
      ['backend', 'text'],
      ['engine_version', 'text'],
      ['verification', 'text'],
      ['canaries_passed', 'number'],
      ['canaries_failed', 'number'],
      ['benched_until', 'text'],
      ['last_error', 'text'],
      ['last_error_at', 'text'],
    ])
    // Every node linked so far has never been verified: it starts on probation like a new one.
    await db.updateTable('nodes').set({ verification: 'probation' }).execute()
    await addColumns(db, 'node_models', [['measured_tokens_per_second', 'number']])

    await createTable(db, '_canaries', [
      ['node', 'text'],
      ['model', 'text'],
      ['request', 'text'],
      ['reference', 'text'],
      ['backend', 'text'],
      ['status', 'text'],
      ['tokens', 'number'],
      ['clear', 'number'],
      ['disagree', 'number'],
      ['mean_logprob', 'number'],
      ['ids_match', 'text'],
      ['detail', 'text'],
      ...created,
    ])
    await createIndex(db, '_canaries', ['node', 'created'])
    await createTable(db, '_verification_evidence', [
      ['node', 'text'],
      ['model', 'text'],
      ['canaries', 'number'],
      ['tokens', 'number'],
      ['clear', 'number'],
      ['disagree', 'number'],
      ['logprob_sum', 'number'],
      ...created,
    ])
    await createIndex(db, '_verification_evidence', ['node', 'model'], true)
    await createTable(db, '_token_calibration', [
      ['model', 'text'],
      ['answers', 'number'],
      ['bytes', 'number'],
      ['tokens', 'number'],
      ['max_bytes_per_token', 'number'],
      ...created,
    ])
    await createIndex(db, '_token_calibration', ['model'], true)
  },
}
