/**
 * @module Spot checks of real answers (docs/verification.md): a sample of users' answers is
 * scored on a reference node like a canary. Each check is recorded in the server-private
 * `_spot_checks`; a node's evidence from sampled answers (temperature > 0: the sums S, E and V of
 * verification/sampled-evidence.ts, with the answers and tokens they cover) sits beside its
 * canary evidence in `_verification_evidence`. Greedy answers add to the canary evidence itself.
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'
import { createIndex, createTable } from '../ddl.ts'

export const spotChecks: Migration = {
  async up(db: Db) {
    for (const column of [
      'sampled_answers',
      'sampled_tokens',
      'sampled_logprob',
      'sampled_expected',
      'sampled_variance',
    ])
      await db.schema
        .alterTable('_verification_evidence')
        .addColumn(column, 'double precision', (c) => c.notNull().defaultTo(0))
        .execute()
    await createTable(db, '_spot_checks', [
      ['node', 'text'],
      ['model', 'text'],
      ['request', 'text'],
      ['reference', 'text'],
      ['backend', 'text'],
      // passed | failed
      ['status', 'text'],
      ['temperature', 'number'],
      ['tokens', 'number'],
      // Greedy answers: clear positions and disagreements there; sampled: this answer's z and
      // the node's after it.
      ['clear', 'number'],
      ['disagree', 'number'],
      ['mean_logprob', 'number'],
      ['z', 'number'],
      ['node_z', 'number'],
      ['ids_match', 'text'],
      ['detail', 'text'],
      ['created', 'text'],
      ['updated', 'text'],
    ])
    await createIndex(db, '_spot_checks', ['node', 'created'])
  },
}
