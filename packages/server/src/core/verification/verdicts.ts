/**
 * @module What a canary's verdict does to a node, in one unit of work (published once it commits): its evidence (per node and
 * model) grows or is reset, the canary is recorded, and the node's counters, reputation and
 * verification state move. Passing canaries raise reputation a little; failing one drops it
 * sharply and puts the node back on probation. Earnings held while on probation are released
 * when it is verified and reversed when it fails (pending-earnings.ts, through the hooks).
 */
import { sql } from 'kysely'
import type { UnitOfWork, WriteTarget } from '../records/unit-of-work.ts'
import { withUnitOfWork } from '../records/unit-of-work.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'
import { addEvidence, fade, judge, NO_EVIDENCE, type Evidence, type Verdict } from './judge.ts'
import type { Thresholds } from './thresholds.ts'

export const CANARY_PASS_GAIN = 0.5
export const CANARY_FAIL_LOSS = 3

export interface CanaryRecord {
  nodeId: string
  modelId: string
  requestId: string
  referenceId: string
  backend: string
  evidence: Evidence
  idsMatch: boolean | null
}

/** Hooks run inside the verdict's unit of work (the ledger side of verification). */
export interface VerdictHooks {
  onGraduated?(uow: UnitOfWork, nodeId: string): Promise<void>
  onFailed?(uow: UnitOfWork, nodeId: string, reason: string): Promise<void>
}

export async function applyCanary(
  target: WriteTarget,
  canary: CanaryRecord,
  thresholds: Thresholds,
  hooks: VerdictHooks = {},
): Promise<Verdict> {
  return withUnitOfWork(target, async (uow) => {
    const trx = uow.trx
    const row = await trx
      .selectFrom('_verification_evidence')
      .selectAll()
      .where('node', '=', canary.nodeId)
      .where('model', '=', canary.modelId)
      .executeTakeFirst()
    const before: Evidence = row
      ? {
          canaries: Number(row.canaries),
          tokens: Number(row.tokens),
          clear: Number(row.clear),
          disagree: Number(row.disagree),
          logprobSum: Number(row.logprob_sum),
        }
      : NO_EVIDENCE
    const evidence = addEvidence(fade(before, thresholds.window), canary.evidence)
    // Ids that do not spell the answer: no honest agent sends them (docs/verification.md).
    const verdict: Verdict =
      canary.idsMatch === false
        ? { outcome: 'fail', reason: 'token ids that do not spell its answer' }
        : judge(evidence, thresholds)
    const now = nowDate()
    const kept = verdict.outcome === 'fail' ? NO_EVIDENCE : evidence
    const values = {
      canaries: kept.canaries,
      tokens: kept.tokens,
      clear: kept.clear,
      disagree: kept.disagree,
      logprob_sum: kept.logprobSum,
      updated: now,
    }
    if (row)
      await trx.updateTable('_verification_evidence').set(values).where('id', '=', row.id).execute()
    else
      await trx
        .insertInto('_verification_evidence')
        .values({
          id: newRecordId(),
          node: canary.nodeId,
          model: canary.modelId,
          ...values,
          created: now,
        })
        .execute()
    const e = canary.evidence
    await trx
      .insertInto('_canaries')
      .values({
        id: newRecordId(),
        node: canary.nodeId,
        model: canary.modelId,
        request: canary.requestId,
        reference: canary.referenceId,
        backend: canary.backend,
        status: verdict.outcome === 'fail' ? 'failed' : 'passed',
        tokens: e.tokens,
        clear: e.clear,
        disagree: e.disagree,
        mean_logprob: e.tokens ? e.logprobSum / e.tokens : 0,
        ids_match: String(canary.idsMatch),
        detail: verdict.outcome === 'fail' ? verdict.reason : '',
        created: now,
        updated: now,
      })
      .execute()
    if (verdict.outcome === 'fail') {
      await uow.update('nodes', (q) =>
        q
          .set({
            canaries_failed: sql`canaries_failed + 1`,
            reputation_score: sql`CASE WHEN reputation_score - ${CANARY_FAIL_LOSS} < 0 THEN 0 ELSE reputation_score - ${CANARY_FAIL_LOSS} END`,
            verification: 'probation',
            updated: now,
          })
          .where('id', '=', canary.nodeId),
      )
      await hooks.onFailed?.(uow, canary.nodeId, verdict.reason)
      return verdict
    }
    const node = await trx
      .selectFrom('nodes')
      .select('verification')
      .where('id', '=', canary.nodeId)
      .executeTakeFirst()
    const graduates = verdict.graduated && node?.verification === 'probation'
    await uow.update('nodes', (q) =>
      q
        .set({
          canaries_passed: sql`canaries_passed + 1`,
          reputation_score: sql`CASE WHEN reputation_score + ${CANARY_PASS_GAIN} > 10 THEN 10 ELSE reputation_score + ${CANARY_PASS_GAIN} END`,
          ...(graduates ? { verification: 'verified' } : {}),
          updated: now,
        })
        .where('id', '=', canary.nodeId),
    )
    if (graduates) await hooks.onGraduated?.(uow, canary.nodeId)
    return verdict
  })
}
