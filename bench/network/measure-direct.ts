/**
 * @module The baseline: the embedded llama.cpp engine called in-process, no network in between.
 */
import { join } from 'node:path'
import { createLlamaEngine } from '@meshwork/node'
import type { ChatMessage, Sampling } from '@meshwork/protocol'

/** One generation, timed from the call. */
export interface GenerationSample {
  /** Call (or send) -> first non-empty text, ms. */
  ttft: number
  /** tokens_output / (call -> end of the answer). */
  tps: number
  /** (tokens_output - 1) / (first text -> end): the streaming rate once tokens flow. */
  streamTps: number
  tokensInput: number
  tokensOutput: number
}

export interface DirectEngine {
  generate(): Promise<GenerationSample>
  dispose(): Promise<void>
}

export async function openDirectEngine(
  mirror: string,
  messages: ChatMessage[],
  sampling: Sampling,
): Promise<DirectEngine> {
  const engine = createLlamaEngine({ threads: 1, gpu: false })
  const model = await engine.load({
    id: 'direct',
    name: 'stories260K',
    path: join(mirror, 'stories260K.gguf'),
  })
  return {
    async generate() {
      const start = performance.now()
      let first = 0
      const result = await model.generate(
        { messages, sampling },
        { onText: (text) => void (text && (first ||= performance.now())) },
      )
      const end = performance.now()
      return {
        ttft: first - start,
        tps: result.tokensOutput / ((end - start) / 1000),
        streamTps: (result.tokensOutput - 1) / ((end - first) / 1000),
        tokensInput: result.tokensInput,
        tokensOutput: result.tokensOutput,
      }
    },
    dispose: () => engine.dispose(),
  }
}
