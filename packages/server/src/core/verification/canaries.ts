/**
 * @module Canaries (docs/verification.md): the coordinator sends nodes realistic prompts at
 * temperature 0 through the scheduler, exactly as user requests go out, at random times (more
 * often while a node is on probation), and has a reference node replay each answer with teacher
 * forcing. The scores become evidence and a verdict (judge.ts, verdicts.ts). Each process
 * canaries the nodes connected to it, with reference nodes connected to it.
 */
import type { Sampling } from '@meshwork/protocol'
import type { CoreApp } from '../app.ts'
import type { MeteredAnswer } from '../metering/answer-meter.ts'
import { countInput } from '../metering/input-count.ts'
import type { Metering } from '../metering/metering.ts'
import type { NodeRegistry } from '../nodes/node-registry.ts'
import type { Scheduler } from '../scheduler/scheduler.ts'
import { canaryPrompt } from './canary-prompts.ts'
import { completeCanaryRequest, createCanaryRequest } from './canary-requests.ts'
import { canaryEvidence } from './judge.ts'
import { findReference } from './reference-nodes.ts'
import { ReferenceScores, ReferenceUnavailableError } from './reference-scores.ts'
import { thresholdsFor } from './thresholds.ts'
import { applyCanary, type VerdictHooks } from './verdicts.ts'
import { log } from '../../tools/log.ts'

export interface CanaryOptions {
  /** Mean time between canaries of one node model while on probation, and once verified. */
  probationIntervalMs: number
  verifiedIntervalMs: number
  /** How often due canaries are looked for; 0 turns the timer off (tests run canaries by hand). */
  tickMs: number
  random: () => number
}

export const defaultCanaryOptions: CanaryOptions = {
  probationIntervalMs: 3 * 60_000,
  verifiedIntervalMs: 45 * 60_000,
  tickMs: 10_000,
  random: Math.random,
}

export type CanaryOutcome =
  | { status: 'no_reference' | 'unanswered' | 'unscored'; detail?: string }
  | { status: 'passed'; graduated: boolean; tokens: number }
  | { status: 'failed'; reason: string; tokens: number }

export interface CanaryDeps {
  core: CoreApp
  registry: NodeRegistry
  scheduler: Scheduler
  metering: Metering
  scores: ReferenceScores
  /** The sampling a user's request gets (config defaults) at a given temperature. */
  sampling: (temperature: number) => Promise<Omit<Sampling, 'max_tokens'>>
  maxOutputTokens: number
  hooks?: VerdictHooks
}

export class Canaries {
  private timer: NodeJS.Timeout | null = null
  private due = new Map<string, number>()
  private running = new Set<string>()

  constructor(
    private deps: CanaryDeps,
    private options: CanaryOptions = defaultCanaryOptions,
  ) {
    if (options.tickMs > 0) {
      this.timer = setInterval(() => void this.tick().catch(() => {}), options.tickMs)
      this.timer.unref()
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
  }

  /** Sends one canary for `modelId` to `nodeId` and judges its answer. */
  async run(nodeId: string, modelId: string): Promise<CanaryOutcome> {
    const { core, registry, scheduler, metering, scores } = this.deps
    const reference = await findReference(core, registry, nodeId, modelId)
    if (!reference) return { status: 'no_reference' }
    const prompt = canaryPrompt(this.options.random)
    const sampling: Sampling = {
      ...(await this.deps.sampling(0)),
      max_tokens: this.deps.maxOutputTokens,
    }
    const meterRule = await metering.rule(modelId)
    const tokensInput = await countInput([prompt], meterRule)
    const requestId = await createCanaryRequest(core, modelId, prompt, sampling)
    const messages = [{ role: 'user' as const, content: prompt }]
    const answer = await new Promise<MeteredAnswer | null>((resolve) => {
      scheduler.enqueue({
        requestId,
        user: '',
        modelId,
        estimatedInput: tokensInput,
        maxTokens: sampling.max_tokens,
        // Paid by nobody: no multiplier, no hold.
        multiplierUnits: 0,
        reservedUnits: 0,
        prompt: { messages },
        sampling,
        meterRule,
        canary: {
          nodeId,
          done: async (metered, processingTimeMs) => {
            if (metered)
              await completeCanaryRequest(
                core,
                requestId,
                nodeId,
                metered,
                tokensInput,
                processingTimeMs,
              )
            resolve(metered)
          },
        },
      })
    })
    if (!answer) return { status: 'unanswered' }
    if (!answer.text) return { status: 'unscored', detail: 'empty answer' }
    let score
    try {
      score = await scores.score(reference.nodeId, {
        modelId,
        messages,
        sampling,
        text: answer.text,
        // The node's own ids: the reference checks them against the text (as the coordinator did,
        // when it has the tokenizer) and scores them, or the text's tokens when they do not fit.
        tokens: answer.nodeIds,
      })
    } catch (err) {
      if (err instanceof ReferenceUnavailableError)
        return { status: 'unscored', detail: err.message }
      throw err
    }
    const backend = registry.local(nodeId)?.backend ?? 'unknown'
    const thresholds = thresholdsFor(reference.sha256, backend)
    const evidence = canaryEvidence(score.tokens, score.positions, thresholds.minLead)
    // The coordinator checked the node's ids against all it streamed when it has the tokenizer;
    // otherwise the reference's check counts, unless the text was cut (then they cannot spell it).
    const idsMatch = answer.idsMatch ?? (answer.cut ? null : score.idsMatch)
    const verdict = await applyCanary(
      core,
      { nodeId, modelId, requestId, referenceId: reference.nodeId, backend, evidence, idsMatch },
      thresholds,
      this.deps.hooks,
    )
    return verdict.outcome === 'fail'
      ? { status: 'failed', reason: verdict.reason, tokens: evidence.tokens }
      : { status: 'passed', graduated: verdict.graduated, tokens: evidence.tokens }
  }

  /** Due canaries of untrusted nodes connected here: each node model on its own random clock. */
  private async tick(): Promise<void> {
    const rows = await this.deps.core.database.db
      .selectFrom('node_models as nm')
      .innerJoin('nodes as n', 'n.id', 'nm.node')
      .select(['n.id as node', 'nm.model as model', 'n.verification as verification'])
      .where('nm.is_serving', '=', 1)
      .where('n.trusted', '=', 0)
      .where('n.is_active', '=', 1)
      .execute()
    const now = Date.now()
    for (const r of rows) {
      const nodeId = String(r.node)
      const key = `${nodeId}/${r.model}`
      if (!this.deps.registry.local(nodeId)?.helloed || this.running.has(nodeId)) continue
      const mean =
        r.verification === 'probation'
          ? this.options.probationIntervalMs
          : this.options.verifiedIntervalMs
      const at = this.due.get(key)
      if (at === undefined) {
        this.due.set(key, now + exponential(mean, this.options.random))
        continue
      }
      if (at > now) continue
      this.due.set(key, now + exponential(mean, this.options.random))
      this.running.add(nodeId)
      void this.run(nodeId, String(r.model))
        .catch((err) => log.error({ err }, 'canary failed to run'))
        .finally(() => this.running.delete(nodeId))
    }
  }
}

/** A random wait with the given mean (a Poisson process: no rhythm a node could learn). */
function exponential(mean: number, random: () => number): number {
  return -Math.log(1 - random()) * mean
}
