/**
 * @module Inference engines of nodes that tell canaries apart, for the spot-check tests: real
 * llama.cpp under a real agent, answering temperature-0 requests (which every canary is) honestly
 * with the claimed model, and every sampled request dishonestly.
 */
import type { GenerationRequest, GenerationResult, LoadedModel } from '@meshwork/node'
import { createLlamaEngine, type InferenceEngine } from '@meshwork/node'

/** What a dishonest answer to a sampled request is. */
export type Cheat = (
  request: GenerationRequest,
  onText: (text: string, ids?: readonly number[]) => void,
) => Promise<GenerationResult>

/** Honest at temperature 0 (with the model the coordinator asked for), `cheat` otherwise. */
export function twoFacedEngine(cheat: Cheat): InferenceEngine {
  const honest = createLlamaEngine({ gpu: false, threads: 1 })
  return {
    ...honest,
    async load(ref, signal): Promise<LoadedModel> {
      const model = await honest.load(ref, signal)
      return {
        ...model,
        generate: (request, options) =>
          request.sampling.temperature === 0
            ? model.generate(request, options)
            : cheat(request, options.onText),
      }
    },
  }
}
