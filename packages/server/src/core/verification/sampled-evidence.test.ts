import { describe, expect, it } from 'vitest'
import type { ScoredPosition } from '@meshwork/protocol'
import { seededRandom } from './canary-prompts.ts'
import {
  addSampled,
  fadeSampled,
  judgeSampled,
  NO_SAMPLED_EVIDENCE,
  DRIFT_VARIANCE,
  sampledAnswerEvidence,
  sampledZ,
  type SampledEvidence,
} from './sampled-evidence.ts'
import { DEFAULT_THRESHOLDS } from './thresholds.ts'

const thresholds = DEFAULT_THRESHOLDS.sampled

/**
 * One simulated position: the reference's distribution p1 over a small vocabulary (random
 * logits), the honest sampler's q (p1 at temperature `t`), and the token a node picks there:
 * drawn from q when honest, from `cheat` (another distribution over the same tokens) otherwise.
 */
function position(random: () => number, t: number, cheat?: 'uniform' | 'other-model') {
  const logits = Array.from({ length: 30 }, () => 4 * gaussian(random))
  const p1 = softmax(logits)
  const q = softmax(logits.map((l) => l / t))
  const lp = p1.map(Math.log)
  const expected = q.reduce((s, w, i) => s + w * lp[i], 0)
  const variance = q.reduce((s, w, i) => s + w * (lp[i] - expected) ** 2, 0)
  const from =
    cheat === 'uniform'
      ? q.map(() => 1 / q.length)
      : cheat === 'other-model'
        ? softmax(logits.map(() => 4 * gaussian(random)))
        : q
  const token = draw(from, random)
  return { top: 0, lead: 0, logprob: lp[token], top_logprob: 0, expected, variance }
}

function answer(
  random: () => number,
  t: number,
  tokens: number,
  cheat?: 'uniform' | 'other-model',
) {
  return sampledAnswerEvidence(Array.from({ length: tokens }, () => position(random, t, cheat)))
}

describe('judging sampled answers (S - E over sqrt V)', () => {
  it('an honest sampler sits near 0 at every temperature, and is never failed', () => {
    const random = seededRandom(7)
    for (const t of [0.5, 0.7, 1, 1.5]) {
      const zs: number[] = []
      for (let node = 0; node < 200; node++) {
        let e = NO_SAMPLED_EVIDENCE
        for (let a = 0; a < 4; a++) {
          e = addSampled(fadeSampled(e, thresholds.window), answer(random, t, 100))
          expect(judgeSampled(e, thresholds).outcome).toBe('pass')
        }
        zs.push(sampledZ(e))
      }
      const mean = zs.reduce((a, b) => a + b, 0) / zs.length
      const sd = Math.sqrt(zs.reduce((s, z) => s + (z - mean) ** 2, 0) / zs.length)
      // About standard normal.
      expect(Math.abs(mean)).toBeLessThan(0.25)
      expect(sd).toBeGreaterThan(0.8)
      expect(sd).toBeLessThan(1.2)
    }
  })

  it('a node drawing from another distribution (made-up text, another model) fails', () => {
    const random = seededRandom(8)
    for (const cheat of ['uniform', 'other-model'] as const) {
      let e = NO_SAMPLED_EVIDENCE
      let verdict = judgeSampled(e, thresholds)
      for (let a = 0; a < 5 && verdict.outcome === 'pass'; a++) {
        e = addSampled(e, answer(random, 0.7, 100, cheat))
        verdict = judgeSampled(e, thresholds)
      }
      expect(verdict).toMatchObject({ outcome: 'fail' })
      expect(sampledZ(e)).toBeLessThan(-thresholds.zToFail)
    }
  })

  it('needs enough tokens before failing anyone, and fails only a node scoring too low', () => {
    const low: SampledEvidence = {
      answers: 1,
      tokens: thresholds.minTokens - 1,
      logprobSum: -500,
      expectedSum: -100,
      varianceSum: 100,
    }
    expect(judgeSampled(low, thresholds).outcome).toBe('pass')
    expect(judgeSampled({ ...low, tokens: thresholds.minTokens }, thresholds).outcome).toBe('fail')
    // Far likelier than an honest sampler (a sampler truncating more than assumed): a pass.
    const high = { ...low, tokens: 1000, logprobSum: 300 }
    expect(judgeSampled(high, thresholds)).toMatchObject({ outcome: 'pass' })
  })

  it('counts at least the drift variance at a token: a near-greedy sampler is judged by nats, not by its tiny spread', () => {
    // Temperature 0.05: the reference expects almost no spread. An honest node whose numerics
    // differ a little lands 0.02 nats below expectation per token; made-up text half a nat.
    const answer = (shortfall: number) =>
      sampledAnswerEvidence(
        Array.from({ length: 256 }, () => ({
          top: 1,
          lead: 0,
          logprob: -0.3 - shortfall,
          top_logprob: -0.3,
          expected: -0.3,
          variance: 1e-5,
        })),
      )
    expect(answer(0.02).varianceSum).toBeCloseTo(256 * DRIFT_VARIANCE, 10)
    expect(judgeSampled(answer(0.02), thresholds)).toMatchObject({ outcome: 'pass' })
    expect(judgeSampled(answer(0.5), thresholds)).toMatchObject({ outcome: 'fail' })
  })

  it('leaves out positions without an expectation, and fades old evidence', () => {
    const positions: ScoredPosition[] = [
      { top: 1, lead: 0, logprob: -1, top_logprob: 0, expected: -0.5, variance: 0.25 },
      { top: 1, lead: 0, logprob: -9, top_logprob: 0 },
    ]
    expect(sampledAnswerEvidence(positions)).toEqual({
      answers: 1,
      tokens: 1,
      logprobSum: -1,
      expectedSum: -0.5,
      varianceSum: 0.25,
    })
    const big = {
      answers: 9,
      tokens: 4000,
      logprobSum: -4000,
      expectedSum: -3000,
      varianceSum: 4000,
    }
    const faded = fadeSampled(big, 2000)
    expect(faded.tokens).toBe(2000)
    // Halving S, E and V divides z by sqrt 2.
    expect(sampledZ(faded)).toBeCloseTo(sampledZ(big) / Math.SQRT2, 10)
  })
})

function softmax(xs: number[]): number[] {
  const m = Math.max(...xs)
  const e = xs.map((x) => Math.exp(x - m))
  const s = e.reduce((a, b) => a + b, 0)
  return e.map((x) => x / s)
}

function draw(p: number[], random: () => number): number {
  let u = random()
  for (let i = 0; i < p.length; i++) if ((u -= p[i]) <= 0) return i
  return p.length - 1
}

function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random())
}
