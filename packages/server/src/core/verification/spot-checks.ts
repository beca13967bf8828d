/**
 * @module Spot checks of real answers (docs/verification.md): canaries are greedy, so a node that
 * answers temperature-0 requests honestly and every other request dishonestly would never be
 * caught by them. After a user's answer is settled, with some probability (higher on probation)
 * a reference node connected to this process scores it by teacher forcing with the request's own
 * prompt and sampling, and the verdict moves the node like a canary's (spot-check-verdicts.ts).
 * A check starts only once the answer is settled and runs beside everything else: it never
 * delays or changes the user's answer or its charge. Checks are bounded per node (one at a time,
 * a minimum gap) and per process, so a busy node cannot flood its reference.
 *
 * The user's prompt and answer go to the operator's reference node: the operator's own machine,
 * or one it trusts (docs/verification.md says so to users of the network).
 */
import type { JobOfferFrame } from '@meshwork/protocol'
import type { CoreApp } from '../app.ts'
import type { MeteredAnswer } from '../metering/answer-meter.ts'
import type { NodeRegistry } from '../nodes/node-registry.ts'
import { log } from '../../tools/log.ts'
import { canaryEvidence } from './judge.ts'
import { findReference } from './reference-nodes.ts'
import { ReferenceUnavailableError, type ReferenceScores } from './reference-scores.ts'
import { sampledAnswerEvidence } from './sampled-evidence.ts'
import { SpotCheckGate, type GateOptions } from './spot-check-gate.ts'
import { applySpotCheck, type SpotCheckRecord } from './spot-check-verdicts.ts'
import { thresholdsFor } from './thresholds.ts'
import type { VerdictHooks } from './verdicts.ts'

export interface SpotCheckOptions extends GateOptions {
  /** Share of a node's answers checked while on probation, and once verified. */
  probationRate: number
  verifiedRate: number
  /** Least time between the starts of two checks of one node. */
  minGapMs: number
  /** Checks running at once in this process (each holds a reference's slot for one prefill). */
  maxInFlight: number
}

/**
 * 25 % on probation: a new node gets a small share of traffic (probationShare) and its earnings
 * are held, so checking one answer in four costs the reference little and catches a cheater within
 * its first few sampled answers (the measurements). 3 % once verified: at a request every 10 s a
 * node is checked about 11 times an hour, against a canary every 45 minutes. At most one check per
 * node at a time and one every 30 s per node (at most 120 an hour), two at a time per process.
 */
export const defaultSpotCheckOptions: SpotCheckOptions = {
  probationRate: 0.25,
  verifiedRate: 0.03,
  minGapMs: 30_000,
  maxInFlight: 2,
  random: Math.random,
}

/** A user's settled answer, as the scheduler had it. */
export interface AnsweredRequest {
  requestId: string
  user: string
  modelId: string
  prompt: JobOfferFrame['prompt']
  sampling: JobOfferFrame['sampling']
  nodeId: string
  nodeOwner: string
  answer: MeteredAnswer
}

export type SpotCheckOutcome =
  | { status: 'skipped' | 'unscored'; detail: string }
  | { status: 'passed'; tokens: number; z: number | null }
  | { status: 'failed'; reason: string; tokens: number }

export interface SpotCheckDeps {
  core: CoreApp
  registry: NodeRegistry
  scores: ReferenceScores
  hooks?: VerdictHooks
}

export class SpotChecks {
  private gate: SpotCheckGate
  private running = new Set<Promise<void>>()
  /** Told every check's outcome (tests). */
  onChecked: ((answered: AnsweredRequest, outcome: SpotCheckOutcome) => void) | null = null

  constructor(
    private deps: SpotCheckDeps,
    options: SpotCheckOptions = defaultSpotCheckOptions,
  ) {
    this.gate = new SpotCheckGate(options)
  }

  private closed = false

  /** Called once a user's answer is settled: decides at once, checks in the background. */
  consider(answered: AnsweredRequest): void {
    if (this.closed) return
    const { nodeId } = answered
    // Canaries belong to no user; a node's own owner pays nothing and moves nothing.
    if (!answered.user || answered.user === answered.nodeOwner || !answered.answer.text) return
    const draw = this.gate.admit(nodeId)
    if (draw === null) return
    const run: Promise<void> = this.check(answered, draw)
      .catch((err: unknown): SpotCheckOutcome => {
        log.error({ err, requestId: answered.requestId }, 'spot check failed to run')
        return { status: 'unscored', detail: 'error' }
      })
      .then((outcome) => this.onChecked?.(answered, outcome))
      .finally(() => {
        this.gate.release(nodeId)
        this.running.delete(run)
      })
    this.running.add(run)
  }

  /** No new checks; those under way end when the reference scores close (unscored). */
  close(): void {
    this.closed = true
  }

  /** Resolves when the checks under way now are done (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running])
  }

  private async check(a: AnsweredRequest, draw: number): Promise<SpotCheckOutcome> {
    const { core, registry, scores } = this.deps
    const node = await core.database.db
      .selectFrom('nodes')
      .select(['trusted', 'verification'])
      .where('id', '=', a.nodeId)
      .executeTakeFirst()
    if (!node || Number(node.trusted) === 1)
      return { status: 'skipped', detail: 'reference or gone' }
    if (!this.gate.drawn(a.nodeId, draw, String(node.verification)))
      return { status: 'skipped', detail: 'not drawn' }
    const reference = await findReference(core, registry, a.nodeId, a.modelId)
    if (!reference) return { status: 'skipped', detail: 'no reference' }
    let score
    try {
      score = await scores.score(reference.nodeId, {
        modelId: a.modelId,
        messages: a.prompt.messages,
        sampling: a.sampling,
        text: a.answer.text,
        tokens: a.answer.nodeIds,
      })
    } catch (err) {
      if (err instanceof ReferenceUnavailableError)
        return { status: 'unscored', detail: err.message }
      throw err
    }
    const backend = registry.local(a.nodeId)?.backend ?? 'unknown'
    const thresholds = thresholdsFor(reference.sha256, backend)
    const greedy = a.sampling.temperature <= 0
    const evidence: SpotCheckRecord['evidence'] = greedy
      ? {
          kind: 'greedy',
          // Not a canary: it adds to the evidence without counting toward verification.
          canary: {
            ...canaryEvidence(score.tokens, score.positions, thresholds.minLead),
            canaries: 0,
          },
        }
      : { kind: 'sampled', sampled: sampledAnswerEvidence(score.positions) }
    const tokens = evidence.kind === 'greedy' ? evidence.canary.tokens : evidence.sampled.tokens
    // A reference that reports no expectations (older, or a support it could not see) says nothing.
    if (tokens === 0) return { status: 'unscored', detail: 'nothing the reference could judge' }
    const verdict = await applySpotCheck(
      core,
      {
        nodeId: a.nodeId,
        modelId: a.modelId,
        requestId: a.requestId,
        referenceId: reference.nodeId,
        backend,
        temperature: a.sampling.temperature,
        evidence,
        // As for canaries: the coordinator's check when it has the tokenizer, else the reference's
        // (unless the answer was cut, when the ids cannot spell it).
        idsMatch: a.answer.idsMatch ?? (a.answer.cut ? null : score.idsMatch),
      },
      thresholds,
      this.deps.hooks,
    )
    return verdict.outcome === 'fail'
      ? { status: 'failed', reason: verdict.reason, tokens }
      : { status: 'passed', tokens, z: verdict.z }
  }
}
