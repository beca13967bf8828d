/**
 * @module sampling-moments
 * What a reference expects of an honestly sampled token (spot checks, docs/verification.md): the
 * mean and variance of log p1(x), p1 being the reference's distribution at temperature 1 after the
 * repeat penalty, when x is drawn as node-llama-cpp's sampler draws it. Its chain (AddonSampler.cpp,
 * llama.cpp's llama-sampler.cpp) is: penalties, top-k, top-p on the softmax of what top-k kept
 * (temperature 1: temperature comes later), then the temperature, then a draw. An answer's tokens
 * never include an end-of-generation token (drawing one ends the answer), so the draw is taken
 * given that it is not one: summed over an answer, log p1 minus its expectation then has mean 0
 * (a martingale), however the answer's length came about.
 *
 * Conservative by construction: the support is taken at least as wide as the node's (top-p with a
 * small slack). Each token added at the bottom of a support has a log-probability no higher than
 * any token already in it, so it can only lower the expectation: an honest node whose sampler kept
 * a token less looks better than expected, never worse.
 */

/** The sampler's settings that shape its distribution (the protocol's names). */
export interface SamplerShape {
  temperature: number
  top_k: number
  top_p: number
}

export interface Moments {
  expected: number
  variance: number
}

/**
 * Added to top-p: the node's logits differ from the reference's in the last bits (other threads,
 * batches, kernels), which can move the token at the top-p boundary in or out. Taking the cut a
 * little wider keeps every token the node may have kept.
 */
export const TOP_P_SLACK = 0.01
/** The floor for a log-probability, as the score reports it. */
const MIN_LOGPROB = -100

/** The most logits a reference asks for per position to see a sampler's whole support. */
export function supportBound(shape: SamplerShape, vocabulary: number, cap: number): number {
  const k = shape.top_k > 0 ? Math.min(shape.top_k, vocabulary) : vocabulary
  return Math.min(k, cap)
}

/**
 * The moments at one position. `top`: the best logits there (after the penalty), best first, at
 * least `supportBound` of them when there are that many; `logNormalizer`: log of the sum of
 * exp(logit) over the whole vocabulary. Null when the sampler is greedy, or its support reaches
 * beyond the logits given (the position then says nothing; skipping it depends only on the
 * context, not on the node's token, so it biases nothing).
 */
export function samplingMoments(
  top: ReadonlyArray<readonly [number, number]>,
  logNormalizer: number,
  vocabulary: number,
  shape: SamplerShape,
  isEnd: (token: number) => boolean,
): Moments | null {
  if (shape.temperature <= 0 || top.length === 0) return null
  const k = shape.top_k > 0 ? Math.min(shape.top_k, vocabulary) : vocabulary
  const seen = Math.min(k, top.length)
  const best = top[0][1]
  // Top-p normalises over what top-k kept: known exactly when all k are seen, or k is everything.
  let kept: number
  if (k <= top.length) {
    kept = 0
    for (let i = 0; i < k; i++) kept += Math.exp(top[i][1] - best)
  } else if (k === vocabulary) kept = Math.exp(logNormalizer - best)
  else return null
  const p = Math.min(1, shape.top_p + TOP_P_SLACK)
  let size = -1
  if (p >= 1) size = k
  else {
    let cumulative = 0
    for (let i = 0; i < seen; i++) {
      cumulative += Math.exp(top[i][1] - best)
      if (cumulative / kept >= p) {
        size = i + 1
        break
      }
    }
    // Rounding: the whole of a fully seen top-k is the widest support there is.
    if (size < 0 && k <= top.length) size = k
  }
  if (size < 0 || size > top.length) return null
  let weight = 0
  let sum = 0
  let squares = 0
  for (let i = 0; i < size; i++) {
    const [token, logit] = top[i]
    if (isEnd(token)) continue
    const w = Math.exp((logit - best) / shape.temperature)
    const lp = Math.max(MIN_LOGPROB, Math.min(0, logit - logNormalizer))
    weight += w
    sum += w * lp
    squares += w * lp * lp
  }
  if (weight === 0) return null
  const expected = Math.min(0, sum / weight)
  return { expected, variance: Math.max(0, squares / weight - expected * expected) }
}
