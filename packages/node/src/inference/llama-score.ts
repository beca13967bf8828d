/**
 * @module llama-score
 * Teacher-forced scoring for reference nodes: the prompt and another node's output tokens are
 * evaluated in one pass (node-llama-cpp's `controlledEvaluate`), and at each output position the
 * reference reports the token it would pick itself (greedy, with the same repeat penalty the
 * judged node's sampler applied there), how clearly that pick leads, and the log-probability it
 * gives the judged node's token. For a sampled job it also reports what an honest sampler's token
 * would score there on average, and how much that varies (sampling-moments.ts). Nothing is
 * generated, so this costs one prefill.
 */
import type {
  ControlledEvaluateInputItem,
  LlamaContextSequence,
  LlamaModel,
  Token,
} from 'node-llama-cpp'
import type { Sampling, ScoredPosition } from '@meshwork/protocol'
import { ScoreError } from './inference-engine.ts'
import { samplingOptions } from './llama-prompt.ts'
import { samplingMoments, supportBound } from './sampling-moments.ts'

/** node-llama-cpp's LlamaCompletion penalises the last 64 generated tokens, new lines excepted. */
const PENALTY_WINDOW = 64
/** The floor reported for a token the reference gives (numerically) no probability at all. */
const MIN_LOGPROB = -100
/**
 * The most logits asked for per position of a sampled job: the network's top-k (40) and any
 * small vocabulary are seen whole; past it, positions whose top-p cut lies beyond are not used.
 */
const MAX_SUPPORT = 512

const vocabularySizes = new WeakMap<LlamaModel, number>()

/** Number of tokens in the model's vocabulary (counted once per model). */
export function vocabularySize(model: LlamaModel): number {
  let size = vocabularySizes.get(model)
  if (size === undefined) {
    size = 0
    for (const _ of model.iterateAllTokens()) size++
    vocabularySizes.set(model, size)
  }
  return size
}

/**
 * The tokens to score for an answer: the node's own ids when they are in the vocabulary and spell
 * its text exactly, otherwise the text's own tokenization (which is what the user was shown).
 */
export function answerTokens(
  model: LlamaModel,
  text: string,
  ids: readonly number[] | undefined,
): { tokens: number[]; idsMatch: boolean | null } {
  if (ids) {
    const size = vocabularySize(model)
    const inVocabulary = ids.every((t) => t < size)
    if (inVocabulary && model.detokenize(ids as readonly Token[]) === text)
      return { tokens: [...ids], idsMatch: true }
  }
  return { tokens: model.tokenize(text), idsMatch: ids ? false : null }
}

/**
 * Scores `tokens` as the continuation of `prefix` (the context the judged node generated from,
 * its beginning token included). The sequence must be empty and hold prefix + tokens.
 */
export async function scoreContinuation(
  model: LlamaModel,
  sequence: LlamaContextSequence,
  prefix: readonly Token[],
  scored: readonly number[],
  sampling: Sampling,
): Promise<ScoredPosition[]> {
  const size = vocabularySize(model)
  if (scored.some((t) => t >= size)) throw new ScoreError('Token id outside the model vocabulary')
  // Ids inside the vocabulary: from here on they are the model's tokens.
  const tokens = scored as readonly Token[]
  if (prefix.length === 0) throw new ScoreError('Nothing to score from')
  if (prefix.length + tokens.length > sequence.contextSize)
    throw new ScoreError('Prompt and answer do not fit the reference context')
  const { repeatPenalty } = samplingOptions(sampling)
  // Greedy jobs need the two best logits; sampled ones the sampler's whole support.
  const includeTop =
    sampling.temperature > 0 ? Math.max(2, supportBound(sampling, size, MAX_SUPPORT)) : 2
  const nl = model.tokens.nl
  const all: Token[] = [...prefix, ...tokens]
  const input: ControlledEvaluateInputItem[] = prefix.slice(0, -1)
  for (let i = prefix.length - 1; i < all.length - 1; i++) {
    const generated = all.slice(prefix.length, i + 1)
    const punishTokens = generated.slice(-PENALTY_WINDOW).filter((t) => t !== nl)
    input.push([
      all[i],
      {
        generateNext: {
          token: true,
          options: { temperature: 0, repeatPenalty: { ...repeatPenalty, punishTokens } },
          // The best logits (after the penalty) and the judged token's.
          logits: { filter: { tokens: [all[i + 1]], includeTop } },
          totalLogitWeight: true,
        },
      },
    ])
  }
  const out = await sequence.controlledEvaluate(input)
  return tokens.map((token, k) => {
    const next = out[prefix.length - 1 + k]?.next
    const ranked = [...(next?.logits?.entries() ?? [])]
    if (!next || ranked.length === 0 || !next.totalLogitWeight)
      throw new ScoreError('The reference produced no probabilities')
    const [top, topLogit] = ranked[0]
    const runnerUp = ranked.find(([t]) => t !== top)?.[1] ?? topLogit
    const logNormalizer = topLogit + Math.log(next.totalLogitWeight)
    const logit = next.logits!.get(token)
    // The judged token, when not among the best, is no higher than any of them: sorted, the
    // first `includeTop` are the best.
    const moments = samplingMoments(
      [...ranked].sort((a, b) => b[1] - a[1]).slice(0, includeTop),
      logNormalizer,
      size,
      sampling,
      (t) => model.isEogToken(t as Token),
    )
    return {
      top: next.token ?? top,
      lead: Math.max(0, topLogit - runnerUp),
      logprob:
        logit === undefined
          ? MIN_LOGPROB
          : Math.max(MIN_LOGPROB, Math.min(0, logit - logNormalizer)),
      top_logprob: Math.max(MIN_LOGPROB, Math.min(0, -Math.log(next.totalLogitWeight))),
      ...(moments ?? {}),
    }
  })
}
