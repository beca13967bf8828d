/**
 * @module Inference engines of dishonest nodes, for the canary tests: real llama.cpp under a real
 * agent, doing what a cheater would do behind the protocol's back.
 */
import type { LoadedModel } from '@meshwork/node'
import { createLlamaEngine, type InferenceEngine } from '@meshwork/node'

/** Loads `actualPath` whatever model the coordinator asks for (serves one model, claims another). */
export function swappedModelEngine(actualPath: string): InferenceEngine {
  const inner = createLlamaEngine({ gpu: false, threads: 1 })
  return {
    ...inner,
    load: (ref, signal) => inner.load({ ...ref, path: actualPath }, signal),
  }
}

/** The claimed model's vocabulary, as a cheater would load it. */
export interface Vocabulary {
  tokenize(text: string): number[]
  detokenize(ids: number[]): string
}

/**
 * Generates with the model at `actualPath` but answers in the claimed model's tokens: the text
 * re-tokenized with the claimed vocabulary, cut to the budget, sent with ids that spell it. A node
 * hiding which model it runs, so well that only the reference's judgement can tell.
 */
export function disguisedModelEngine(actualPath: string, vocabulary: Vocabulary): InferenceEngine {
  const inner = swappedModelEngine(actualPath)
  return {
    ...inner,
    async load(ref, signal): Promise<LoadedModel> {
      const model = await inner.load(ref, signal)
      return {
        ...model,
        async generate(request, options) {
          let text = ''
          const res = await model.generate(request, {
            ...options,
            onText: (piece) => void (text += piece),
          })
          const ids = vocabulary.tokenize(text).slice(0, request.sampling.max_tokens)
          options.onText(vocabulary.detokenize(ids), ids)
          return { ...res, tokensOutput: ids.length }
        },
      }
    },
  }
}
