/**
 * @module What a spot check's verdict does to a node (docs/verification.md, "Spot checks of real
 * answers"), in one unit of work. A greedy answer adds to the node's canary evidence and is judged
 * as canaries are; a sampled one adds to its sampled evidence and is judged by the likelihood test
 * (sampled-evidence.ts). A failure costs what a failed canary costs (verdicts.ts `punish`: reputation,
 * probation, held earnings back to the payers) and resets both evidences. A pass changes nothing
 * else: it neither raises reputation (completed work already does) nor counts as a canary toward
 * verification, so a node's traffic alone cannot verify it.
 */
import type { WriteTarget } from '../records/unit-of-work.ts'
import { withUnitOfWork } from '../records/unit-of-work.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'
import { addEvidence, fade, judge, NO_EVIDENCE, type Evidence } from './judge.ts'
import {
  addSampled,
  fadeSampled,
  judgeSampled,
  NO_SAMPLED_EVIDENCE,
  sampledZ,
  type SampledEvidence,
} from './sampled-evidence.ts'
import type { Thresholds } from './thresholds.ts'
import { punish, readEvidence, writeEvidence, type VerdictHooks } from './verdicts.ts'

export interface SpotCheckRecord {
  nodeId: string
  modelId: string
  requestId: string
  referenceId: string
  backend: string
  temperature: number
  /** Greedy answers' evidence (canaries: 0), or sampled answers'. */
  evidence: { kind: 'greedy'; canary: Evidence } | { kind: 'sampled'; sampled: SampledEvidence }
  idsMatch: boolean | null
}

export type SpotVerdict =
  { outcome: 'fail'; reason: string } | { outcome: 'pass'; z: number | null }

export async function applySpotCheck(
  target: WriteTarget,
  check: SpotCheckRecord,
  thresholds: Thresholds,
  hooks: VerdictHooks = {},
): Promise<SpotVerdict> {
  return withUnitOfWork(target, async (uow) => {
    const stored = await readEvidence(uow, check.nodeId, check.modelId)
    let canary = stored.canary
    let sampled = stored.sampled
    let verdict: SpotVerdict
    if (check.evidence.kind === 'greedy') {
      canary = addEvidence(fade(canary, thresholds.window), check.evidence.canary)
      const v = judge(canary, thresholds)
      // Graduation is for canaries only (above): a pass here is just a pass.
      verdict = v.outcome === 'fail' ? v : { outcome: 'pass', z: null }
    } else {
      sampled = addSampled(fadeSampled(sampled, thresholds.sampled.window), check.evidence.sampled)
      verdict = judgeSampled(sampled, thresholds.sampled)
    }
    // Ids that do not spell the answer: no honest agent sends them (as for canaries).
    if (check.idsMatch === false)
      verdict = { outcome: 'fail', reason: 'token ids that do not spell its answer' }
    const now = nowDate()
    const failed = verdict.outcome === 'fail'
    await writeEvidence(
      uow,
      stored,
      failed ? { canary: NO_EVIDENCE, sampled: NO_SAMPLED_EVIDENCE } : { canary, sampled },
      now,
    )
    const e = check.evidence
    const tokens = e.kind === 'greedy' ? e.canary.tokens : e.sampled.tokens
    const logprobSum = e.kind === 'greedy' ? e.canary.logprobSum : e.sampled.logprobSum
    await uow.trx
      .insertInto('_spot_checks')
      .values({
        id: newRecordId(),
        node: check.nodeId,
        model: check.modelId,
        request: check.requestId,
        reference: check.referenceId,
        backend: check.backend,
        status: failed ? 'failed' : 'passed',
        temperature: check.temperature,
        tokens,
        clear: e.kind === 'greedy' ? e.canary.clear : 0,
        disagree: e.kind === 'greedy' ? e.canary.disagree : 0,
        mean_logprob: tokens ? logprobSum / tokens : 0,
        z: e.kind === 'sampled' ? sampledZ(e.sampled) : 0,
        node_z: e.kind === 'sampled' ? sampledZ(sampled) : 0,
        ids_match: String(check.idsMatch),
        detail: verdict.outcome === 'fail' ? verdict.reason : '',
        created: now,
        updated: now,
      })
      .execute()
    if (verdict.outcome === 'fail')
      await punish(uow, check.nodeId, verdict.reason, hooks, now, { canary: false })
    return verdict
  })
}
