import { describe, expect, it } from 'vitest'
import { samplingMoments, supportBound, TOP_P_SLACK } from './sampling-moments.ts'

/** Logits best first, with the log of their sum of exps (a vocabulary of just these). */
function position(logits: number[]) {
  const top = logits.map((l, i) => [i, l] as const)
  const logNormalizer = Math.log(logits.reduce((s, l) => s + Math.exp(l), 0))
  return { top, logNormalizer, vocabulary: logits.length }
}

/** The moments by brute force from the sampler's definition (top-k, top-p at T=1, temperature). */
function bruteForce(logits: number[], t: number, k: number, p: number, end = new Set<number>()) {
  const z = logits.reduce((s, l) => s + Math.exp(l), 0)
  const kept = logits.slice(0, k)
  const zk = kept.reduce((s, l) => s + Math.exp(l), 0)
  let size = k
  let c = 0
  for (let i = 0; i < k; i++) {
    c += Math.exp(kept[i]) / zk
    if (c >= p) {
      size = i + 1
      break
    }
  }
  const support = kept
    .slice(0, size)
    .map((l, i) => ({ l, i }))
    .filter((x) => !end.has(x.i))
  const w = support.map((x) => Math.exp(x.l / t))
  const W = w.reduce((a, b) => a + b, 0)
  const lp = support.map((x) => x.l - Math.log(z))
  const e = lp.reduce((s, v, i) => s + (w[i] / W) * v, 0)
  const v = lp.reduce((s, x, i) => s + (w[i] / W) * (x - e) ** 2, 0)
  return { expected: e, variance: v }
}

const logits = [3, 2.5, 2, 1, 0.5, 0, -1, -2, -3, -5]

describe('what an honest sampler is expected to score', () => {
  it('matches the sampler chain computed by hand: top-k, then top-p at temperature 1, then the temperature', () => {
    const { top, logNormalizer, vocabulary } = position(logits)
    for (const t of [0.5, 0.7, 1, 1.5])
      for (const k of [3, 5, 10]) {
        const got = samplingMoments(
          top,
          logNormalizer,
          vocabulary,
          { temperature: t, top_k: k, top_p: 0.9 },
          () => false,
        )!
        const want = bruteForce(logits, t, k, 0.9 + TOP_P_SLACK)
        expect(got.expected).toBeCloseTo(want.expected, 10)
        expect(got.variance).toBeCloseTo(want.variance, 10)
      }
  })

  it('leaves end-of-generation tokens out (an answer never holds one: drawing one ends it)', () => {
    const { top, logNormalizer, vocabulary } = position(logits)
    const shape = { temperature: 1, top_k: 10, top_p: 1 }
    const got = samplingMoments(top, logNormalizer, vocabulary, shape, (t) => t === 0)!
    expect(got.expected).toBeCloseTo(bruteForce(logits, 1, 10, 1, new Set([0])).expected, 10)
  })

  it('takes the support at least as wide as the sampler: a narrower one only raises what is expected', () => {
    const { top, logNormalizer, vocabulary } = position(logits)
    const shape = { temperature: 1, top_k: 10, top_p: 0.9 }
    const got = samplingMoments(top, logNormalizer, vocabulary, shape, () => false)!
    // Every cut the node may have made (its top-p, its own logits a little off) keeps a prefix
    // of the ranking no longer than ours, and expects at least as much.
    for (const p of [0.5, 0.8, 0.85, 0.9, 0.905])
      expect(bruteForce(logits, 1, 10, p).expected).toBeGreaterThanOrEqual(got.expected - 1e-12)
    // A wider one would expect less: the direction that matters.
    expect(bruteForce(logits, 1, 10, 1).expected).toBeLessThan(got.expected)
  })

  it('says nothing for greedy jobs or when the support reaches past the logits it was given', () => {
    const { top, logNormalizer } = position(logits)
    const greedy = { temperature: 0, top_k: 40, top_p: 0.9 }
    expect(samplingMoments(top, logNormalizer, 1000, greedy, () => false)).toBeNull()
    // top-k 40 of a 1,000-token vocabulary, only 10 logits seen: the top-k set is not known.
    const sampled = { temperature: 1, top_k: 40, top_p: 0.9 }
    expect(samplingMoments(top, logNormalizer, 1000, sampled, () => false)).toBeNull()
    // No top-k, the top-p cut not reached within what was seen.
    const flat = { top: top.slice(0, 2), logNormalizer: logNormalizer + 5 }
    const open = { temperature: 1, top_k: 0, top_p: 0.9 }
    expect(samplingMoments(flat.top, flat.logNormalizer, 1000, open, () => false)).toBeNull()
  })

  it('asks for the whole top-k, capped', () => {
    expect(supportBound({ temperature: 1, top_k: 40, top_p: 0.9 }, 512, 512)).toBe(40)
    expect(supportBound({ temperature: 1, top_k: 0, top_p: 0.9 }, 512, 512)).toBe(512)
    expect(supportBound({ temperature: 1, top_k: 0, top_p: 0.9 }, 32000, 512)).toBe(512)
  })
})
