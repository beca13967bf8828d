/**
 * @module measure-tokens-per-second
 * A short, fixed generation right after a model loads; its speed is what the node reports.
 */
import type { LoadedModel } from '../inference/inference-engine.ts'

/** Output tokens per second of a short deterministic generation (0 when nothing came out). */
export async function measureTokensPerSecond(
  model: LoadedModel,
  signal?: AbortSignal,
  maxTokens = 32,
): Promise<number> {
  const started = performance.now()
  const res = await model.generate(
    {
      messages: [{ role: 'user', content: 'Once upon a time' }],
      sampling: {
        temperature: 0,
        top_p: 1,
        top_k: 1,
        repeat_penalty: 1,
        frequency_penalty: 0,
        presence_penalty: 0,
        max_tokens: maxTokens,
        context_length: 512,
      },
    },
    { signal, onText: () => {} },
  )
  const seconds = (performance.now() - started) / 1000
  if (res.tokensOutput === 0 || seconds <= 0) return 0
  return Math.round((res.tokensOutput / seconds) * 10) / 10
}
