/**
 * @module What a canary's verdict does to a node, in one unit of work (published once it commits):
 * its evidence (per node and model) grows or is reset (with the evidence of spot checks), the
 * canary is recorded, and the node's counters, reputation and verification state move. Passing canaries raise reputation a little; failing one drops it
 * sharply and puts the node back on probation. Earnings held while on probation are released
 * when it is verified and reversed when it fails (pending-earnings.ts, through the hooks).
 */
import { sql } from 'kysely'
import type { UnitOfWork, WriteTarget } from '../records/unit-of-work.ts'
import { withUnitOfWork } from '../records/unit-of-work.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'
import { addEvidence, fade, judge, NO_EVIDENCE, type Evidence, type Verdict } from './judge.ts'
import { NO_SAMPLED_EVIDENCE, type SampledEvidence } from './sampled-evidence.ts'
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
    const stored = await readEvidence(uow, canary.nodeId, canary.modelId)
    const evidence = addEvidence(fade(stored.canary, thresholds.window), canary.evidence)
    // Ids that do not spell the answer: no honest agent sends them (docs/verification.md).
    const verdict: Verdict =
      canary.idsMatch === false
        ? { outcome: 'fail', reason: 'token ids that do not spell its answer' }
        : judge(evidence, thresholds)
    const now = nowDate()
    await writeEvidence(
      uow,
      stored,
      verdict.outcome === 'fail'
        ? { canary: NO_EVIDENCE, sampled: NO_SAMPLED_EVIDENCE }
        : { canary: evidence, sampled: stored.sampled },
      now,
    )
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
      await punish(uow, canary.nodeId, verdict.reason, hooks, now, { canary: true })
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

/** A node's stored evidence for one model: from canaries (and greedy spot checks), and sampled. */
export interface StoredEvidence {
  id: string | null
  nodeId: string
  modelId: string
  canary: Evidence
  sampled: SampledEvidence
}

export async function readEvidence(
  uow: UnitOfWork,
  nodeId: string,
  modelId: string,
): Promise<StoredEvidence> {
  const row = await uow.trx
    .selectFrom('_verification_evidence')
    .selectAll()
    .where('node', '=', nodeId)
    .where('model', '=', modelId)
    .executeTakeFirst()
  if (!row) return { id: null, nodeId, modelId, canary: NO_EVIDENCE, sampled: NO_SAMPLED_EVIDENCE }
  return {
    id: String(row.id),
    nodeId,
    modelId,
    canary: {
      canaries: Number(row.canaries),
      tokens: Number(row.tokens),
      clear: Number(row.clear),
      disagree: Number(row.disagree),
      logprobSum: Number(row.logprob_sum),
    },
    sampled: {
      answers: Number(row.sampled_answers),
      tokens: Number(row.sampled_tokens),
      logprobSum: Number(row.sampled_logprob),
      expectedSum: Number(row.sampled_expected),
      varianceSum: Number(row.sampled_variance),
    },
  }
}

export async function writeEvidence(
  uow: UnitOfWork,
  stored: StoredEvidence,
  next: { canary: Evidence; sampled: SampledEvidence },
  now: string,
): Promise<void> {
  const { canary: c, sampled: s } = next
  const values = {
    canaries: c.canaries,
    tokens: c.tokens,
    clear: c.clear,
    disagree: c.disagree,
    logprob_sum: c.logprobSum,
    sampled_answers: s.answers,
    sampled_tokens: s.tokens,
    sampled_logprob: s.logprobSum,
    sampled_expected: s.expectedSum,
    sampled_variance: s.varianceSum,
    updated: now,
  }
  if (stored.id)
    await uow.trx
      .updateTable('_verification_evidence')
      .set(values)
      .where('id', '=', stored.id)
      .execute()
  else
    await uow.trx
      .insertInto('_verification_evidence')
      .values({
        id: newRecordId(),
        node: stored.nodeId,
        model: stored.modelId,
        ...values,
        created: now,
      })
      .execute()
}

/**
 * A failed check (a canary, or a spot check of a real answer): reputation falls sharply, the node
 * goes back on probation and its held earnings go back to the payers (the hook).
 */
export async function punish(
  uow: UnitOfWork,
  nodeId: string,
  reason: string,
  hooks: VerdictHooks,
  now: string,
  { canary }: { canary: boolean },
): Promise<void> {
  await uow.update('nodes', (q) =>
    q
      .set({
        ...(canary ? { canaries_failed: sql`canaries_failed + 1` } : {}),
        reputation_score: sql`CASE WHEN reputation_score - ${CANARY_FAIL_LOSS} < 0 THEN 0 ELSE reputation_score - ${CANARY_FAIL_LOSS} END`,
        verification: 'probation',
        updated: now,
      })
      .where('id', '=', nodeId),
  )
  await hooks.onFailed?.(uow, nodeId, reason)
}
