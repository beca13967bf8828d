/**
 * @module Verification thresholds per model file (sha256), with the measurements behind them in
 * docs/verification.md (bench/verification). Where a model has not been measured, the defaults
 * are looser: more disagreement is allowed before a node fails, and the log-probability test is
 * off. A node's claimed backend never makes them looser (thresholdsFor).
 */
import type { SampledThresholds } from './sampled-evidence.ts'

export interface Thresholds {
  /** A reference pick counts as clear when its logit leads the runner-up's by this much. */
  minLead: number
  /** The most an honest node is assumed to disagree at clear positions (per position). */
  honestDisagreeRate: number
  /** Chance, per judgement, that an honest node is failed on agreement (the binomial test). */
  falsePositiveBudget: number
  /** Clear positions seen before agreement can fail a node. */
  minClearToFail: number
  /** Mean log-probability of the node's tokens below which it fails (null: not measured). */
  minMeanLogprob: number | null
  minTokensForLogprob: number
  /** Passed canaries, and tokens scored, before a node on probation is verified. */
  canariesToPass: number
  minTokensToPass: number
  /** Evidence older than this many tokens fades. */
  window: number
  /** Spot checks of sampled answers (sampled-evidence.ts). */
  sampled: SampledThresholds
}

export const DEFAULT_THRESHOLDS: Thresholds = {
  minLead: 1,
  honestDisagreeRate: 0.05,
  falsePositiveBudget: 1e-6,
  minClearToFail: 100,
  minMeanLogprob: null,
  minTokensForLogprob: 200,
  canariesToPass: 3,
  minTokensToPass: 300,
  window: 2000,
  sampled: { zToFail: 6, minTokens: 200, window: 2000 },
}

interface Measured {
  sha256: string
  /** Backend classes the measurement covers. */
  backends: RegExp
  values: Partial<Thresholds>
}

const STORIES_260K = '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d'

/** Set from bench/verification on x86-64 CPUs (docs/verification.md, "Measurements"). */
const measured: Measured[] = [
  {
    sha256: STORIES_260K,
    backends: /^cpu(-|$)/,
    values: { honestDisagreeRate: 0.02, minMeanLogprob: -1 },
  },
]

/**
 * The thresholds a node serving the model file is judged by. The backend class is the node's own
 * claim (its hello): believed, a CPU node cheating with a close quantization could say `cuda` and
 * be judged by the looser defaults, the log-probability test off (red team). So a model that has
 * been measured is judged by its measured values whatever the node claims: the tests they set
 * are far from what honest numerics drift (honest CPU nodes disagreed at 0 of 25,348 clear
 * positions against the 2 % allowed, and their mean log-probability sat 7 standard deviations
 * above the floor), which a GPU's last-bit differences do not come near; only an unmeasured
 * model gets the defaults. `backend` picks among measured rows (the first one measured on it),
 * never looser than the model's measured one.
 */
export function thresholdsFor(sha256: string, backend: string): Thresholds {
  const rows = measured.filter((x) => x.sha256 === sha256.toLowerCase())
  const m = rows.find((x) => x.backends.test(backend)) ?? rows[0]
  return { ...DEFAULT_THRESHOLDS, ...m?.values }
}
