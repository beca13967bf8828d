/**
 * @module Judging a node from reference scores (docs/verification.md). Per canary the reference
 * reports, for every token of the node's answer, its own greedy pick there, how clearly that pick
 * led, and the log-probability of the node's token. A node is judged on its evidence across
 * canaries (hundreds of tokens): it fails when its disagreements at clear-lead positions are too
 * many for an honest node of its backend class (a binomial test with an explicit false-positive
 * budget), or when the mean log-probability of its tokens is below what honest answers score.
 */
import type { ScoredPosition } from '@meshwork/protocol'
import type { Thresholds } from './thresholds.ts'

/** What a node's answers have shown so far (summed over canaries). */
export interface Evidence {
  canaries: number
  /** Tokens scored. */
  tokens: number
  /** Positions where the reference's pick led the runner-up by at least `minLead`. */
  clear: number
  /** Of those, positions where the node's token was not the reference's pick. */
  disagree: number
  /** Sum of the log-probabilities of the node's tokens. */
  logprobSum: number
}

export const NO_EVIDENCE: Evidence = {
  canaries: 0,
  tokens: 0,
  clear: 0,
  disagree: 0,
  logprobSum: 0,
}

export type Verdict = { outcome: 'fail'; reason: string } | { outcome: 'pass'; graduated: boolean }

/** One canary's evidence: `tokens[i]` is the token the reference scored at `positions[i]`. */
export function canaryEvidence(
  tokens: readonly number[],
  positions: readonly ScoredPosition[],
  minLead: number,
): Evidence {
  let clear = 0
  let disagree = 0
  let logprobSum = 0
  positions.forEach((p, i) => {
    logprobSum += p.logprob
    if (p.lead < minLead) return
    clear++
    if (p.top !== tokens[i]) disagree++
  })
  return { canaries: 1, tokens: positions.length, clear, disagree, logprobSum }
}

export function addEvidence(a: Evidence, b: Evidence): Evidence {
  return {
    canaries: a.canaries + b.canaries,
    tokens: a.tokens + b.tokens,
    clear: a.clear + b.clear,
    disagree: a.disagree + b.disagree,
    logprobSum: a.logprobSum + b.logprobSum,
  }
}

/**
 * Old evidence fades: past `window` tokens the totals are scaled down, so a node that turns bad
 * after a good start is judged on what it does now.
 */
export function fade(e: Evidence, window: number): Evidence {
  if (e.tokens <= window) return e
  const k = window / e.tokens
  return {
    canaries: e.canaries,
    tokens: e.tokens * k,
    clear: e.clear * k,
    disagree: e.disagree * k,
    logprobSum: e.logprobSum * k,
  }
}

/** The verdict on a node's evidence after its latest canary. */
export function judge(e: Evidence, t: Thresholds): Verdict {
  if (e.clear >= t.minClearToFail) {
    const p = binomialTail(Math.round(e.clear), Math.round(e.disagree), t.honestDisagreeRate)
    if (p < t.falsePositiveBudget)
      return {
        outcome: 'fail',
        reason: `disagreed with the reference at ${Math.round(e.disagree)} of ${Math.round(e.clear)} clear positions`,
      }
  }
  if (t.minMeanLogprob !== null && e.tokens >= t.minTokensForLogprob) {
    const mean = e.logprobSum / e.tokens
    if (mean < t.minMeanLogprob)
      return {
        outcome: 'fail',
        reason: `mean log-probability ${mean.toFixed(2)} below ${t.minMeanLogprob}`,
      }
  }
  // `canaries` counts the canaries since the last failure (evidence is reset then).
  const graduated = e.canaries >= t.canariesToPass && e.tokens >= t.minTokensToPass
  return { outcome: 'pass', graduated }
}

/**
 * P(X >= k) for X ~ Binomial(n, p): how likely an honest node (disagreeing at rate p) shows k or
 * more disagreements in n clear positions. Summed in log space, exact for the sizes used here.
 */
export function binomialTail(n: number, k: number, p: number): number {
  if (k <= 0) return 1
  if (k > n) return 0
  if (p <= 0) return 0
  if (p >= 1) return 1
  const logP = Math.log(p)
  const logQ = Math.log1p(-p)
  let logTerm = logChoose(n, k) + k * logP + (n - k) * logQ
  let sum = 0
  for (let i = k; i <= n; i++) {
    sum += Math.exp(logTerm)
    // term(i+1) / term(i) = (n - i) / (i + 1) * p / q
    logTerm += Math.log((n - i) / (i + 1)) + logP - logQ
  }
  return Math.min(1, sum)
}

function logChoose(n: number, k: number): number {
  return logFactorial(n) - logFactorial(k) - logFactorial(n - k)
}

function logFactorial(n: number): number {
  let s = 0
  for (let i = 2; i <= n; i++) s += Math.log(i)
  return s
}
