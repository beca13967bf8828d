/**
 * @module Judging sampled answers (spot checks at temperature > 0, docs/verification.md). At each
 * token the reference reports the log-probability p1 it gives the node's token (temperature 1,
 * after the repeat penalty), and what that log-probability is on average, and how much it varies,
 * when the token is drawn as an honest node's sampler draws it (its top-k, top-p and temperature;
 * packages/node/src/inference/sampling-moments.ts). Over a node's sampled answers, S (the sum of
 * log-probabilities) minus E (the sum of expectations) is a sum of terms of mean 0 for an honest
 * node, of variance V (the sum of variances); a wrong model or made-up text scores S far below E.
 * The test is one-sided: only a node scoring too low fails. The reference takes the honest
 * sampler's support at least as wide as it can be, which can only lower E: a sampler that differs
 * a little makes an honest node look better, never worse.
 */
import type { ScoredPosition } from '@meshwork/protocol'

/** What a node's sampled answers have shown (summed over spot checks since its last failure). */
export interface SampledEvidence {
  answers: number
  /** Tokens with an expectation (the others say nothing and are left out). */
  tokens: number
  /** S, E and V above. */
  logprobSum: number
  expectedSum: number
  varianceSum: number
}

export const NO_SAMPLED_EVIDENCE: SampledEvidence = {
  answers: 0,
  tokens: 0,
  logprobSum: 0,
  expectedSum: 0,
  varianceSum: 0,
}

export interface SampledThresholds {
  /** A node fails when (S - E) / sqrt(V) is below minus this. */
  zToFail: number
  /** Tokens with an expectation needed before a node can fail (the normal tail is rough below). */
  minTokens: number
  /** Evidence older than this many tokens fades. */
  window: number
}

/**
 * The least variance counted at a token: an honest node's logits differ from the reference's in
 * the last bits (other threads, batches, kernels; more on GPUs), which at a low temperature moves
 * its draw between near-tied tokens that the reference's sampler would all but never pick. The
 * log-probability moves by little there, but the variance the reference expects is smaller still:
 * at temperature 0.05, honest answers (stories260K, threads 1 against 2) scored z down to -6.9
 * (one in 200, sd 1.46) without this floor. 0.01 is a tenth of a nat per token; where sampling is
 * real (temperature 0.5 and up) the variance is far above it, and a wrong model or made-up text
 * falls by whole nats per token (docs/verification.md).
 */
export const DRIFT_VARIANCE = 0.01

/** One answer's evidence, from the reference's positions (those with an expectation). */
export function sampledAnswerEvidence(positions: readonly ScoredPosition[]): SampledEvidence {
  const e = { ...NO_SAMPLED_EVIDENCE, answers: 1 }
  for (const p of positions) {
    if (p.expected === undefined || p.variance === undefined) continue
    e.tokens++
    e.logprobSum += p.logprob
    e.expectedSum += p.expected
    e.varianceSum += Math.max(p.variance, DRIFT_VARIANCE)
  }
  return e
}

export function addSampled(a: SampledEvidence, b: SampledEvidence): SampledEvidence {
  return {
    answers: a.answers + b.answers,
    tokens: a.tokens + b.tokens,
    logprobSum: a.logprobSum + b.logprobSum,
    expectedSum: a.expectedSum + b.expectedSum,
    varianceSum: a.varianceSum + b.varianceSum,
  }
}

/**
 * Past `window` tokens the sums are scaled down, so a node that turns bad is judged on what it
 * does now. Scaling S, E and V by k scales the statistic by sqrt(k): old evidence weighs less.
 */
export function fadeSampled(e: SampledEvidence, window: number): SampledEvidence {
  if (e.tokens <= window) return e
  const k = window / e.tokens
  return {
    answers: e.answers,
    tokens: e.tokens * k,
    logprobSum: e.logprobSum * k,
    expectedSum: e.expectedSum * k,
    varianceSum: e.varianceSum * k,
  }
}

/** (S - E) / sqrt(V): about standard normal for an honest node; 0 without variance. */
export function sampledZ(e: SampledEvidence): number {
  if (e.varianceSum <= 0) return 0
  return (e.logprobSum - e.expectedSum) / Math.sqrt(e.varianceSum)
}

export type SampledVerdict = { outcome: 'fail'; reason: string } | { outcome: 'pass'; z: number }

/** The verdict on a node's sampled evidence after its latest spot check. */
export function judgeSampled(e: SampledEvidence, t: SampledThresholds): SampledVerdict {
  const z = sampledZ(e)
  if (e.tokens >= t.minTokens && z < -t.zToFail)
    return {
      outcome: 'fail',
      reason: `sampled answers scored ${z.toFixed(1)} standard deviations below an honest sampler over ${Math.round(e.tokens)} tokens`,
    }
  return { outcome: 'pass', z }
}
