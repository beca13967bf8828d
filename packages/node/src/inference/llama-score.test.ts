import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sampling } from '@meshwork/protocol'
import { createLlamaEngine, type LlamaLoadedModel } from './llama-engine.ts'
import { backendClass } from './llama-backend.ts'

const MODELS = new URL('../../../../../shared/models/', import.meta.url).pathname
const greedy: Sampling = {
  temperature: 0,
  top_p: 0.9,
  top_k: 40,
  repeat_penalty: 1.1,
  frequency_penalty: 0,
  presence_penalty: 0,
  max_tokens: 120,
  context_length: 8000,
}
const messages = [{ role: 'user' as const, content: 'Tell me a story about a dog and a red ball.' }]

async function answer(model: LlamaLoadedModel, sampling = greedy) {
  let text = ''
  const tokens: number[] = []
  const pieces: Array<{ text: string; tokens: readonly number[] | undefined }> = []
  await model.generate(
    { messages, sampling },
    {
      onText: (t, ids) => {
        pieces.push({ text: t, tokens: ids })
        text += t
        tokens.push(...(ids ?? []))
      },
    },
  )
  return { text, tokens, pieces }
}

describe('teacher-forced scoring (reference nodes)', () => {
  // The reference scores with 2 threads (one prefill); the judged node generates with 1 thread and
  // a small batch (2-thread generation on a small shared machine is slow, not different).
  const reference = createLlamaEngine({ gpu: false, threads: 2 })
  const other = createLlamaEngine({ gpu: false, threads: 1, batchSize: 16 })
  let stories: LlamaLoadedModel
  let storiesElsewhere: LlamaLoadedModel
  let tiny: LlamaLoadedModel
  beforeAll(async () => {
    stories = await reference.load({
      id: 's',
      name: 'stories260K',
      path: `${MODELS}stories260K.gguf`,
    })
    storiesElsewhere = await other.load({
      id: 's',
      name: 'stories260K',
      path: `${MODELS}stories260K.gguf`,
    })
    tiny = await other.load({ id: 't', name: 'tiny', path: `${MODELS}llama-2-tiny-random.gguf` })
  })
  afterAll(async () => {
    await reference.dispose()
    await other.dispose()
  })

  it('streams token ids with every text piece; in order they spell the answer', async () => {
    const { text, tokens, pieces } = await answer(stories)
    expect(pieces.length).toBeGreaterThan(1)
    expect(pieces.every((p) => Array.isArray(p.tokens) && p.tokens.length > 0)).toBe(true)
    expect(tokens.length).toBeLessThanOrEqual(greedy.max_tokens)
    const scored = await stories.score!({ messages, sampling: greedy, text, tokens })
    expect(scored.idsMatch).toBe(true)
    expect(scored.tokens).toEqual(tokens)
  })

  it('agrees with an honest greedy answer from other threads and batch size wherever its pick is clear', async () => {
    const honest = await answer(storiesElsewhere)
    const { positions, tokens } = await stories.score!({
      messages,
      sampling: greedy,
      text: honest.text,
      tokens: honest.tokens,
    })
    expect(positions).toHaveLength(honest.tokens.length)
    const clear = positions.filter((p) => p.lead >= 1)
    expect(clear.length).toBeGreaterThan(positions.length / 2)
    expect(clear.filter((p) => p.top !== tokens[positions.indexOf(p)]).length).toBe(0)
    const meanLogprob = positions.reduce((s, p) => s + p.logprob, 0) / positions.length
    expect(meanLogprob).toBeGreaterThan(-1)
  })

  it("scores another model's text (by the text, as the ids are not its vocabulary) far lower", async () => {
    const wrong = await answer(tiny, { ...greedy, max_tokens: 60 })
    const scored = await stories.score!({
      messages,
      sampling: greedy,
      text: wrong.text,
      tokens: wrong.tokens,
    })
    expect(scored.idsMatch).toBe(false)
    const clear = scored.positions.filter((p) => p.lead >= 1)
    const disagree = clear.filter((p) => p.top !== scored.tokens[scored.positions.indexOf(p)])
    expect(disagree.length).toBeGreaterThan(clear.length / 2)
    const meanLogprob =
      scored.positions.reduce((s, p) => s + p.logprob, 0) / scored.positions.length
    expect(meanLogprob).toBeLessThan(-3)
  })

  it('names the backend class from what llama.cpp reports', () => {
    expect(backendClass({ gpu: 'cuda', systemInfo: '' })).toBe('cuda')
    expect(
      backendClass({
        gpu: false,
        systemInfo: 'CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 0 |',
      }),
    ).toBe('cpu-avx2')
    expect(backendClass({ gpu: false, systemInfo: 'CPU : NEON = 1 | ARM_FMA = 1 |' })).toBe(
      'cpu-neon',
    )
    expect(backendClass({ gpu: false, systemInfo: 'CPU : SSE3 = 1 |' })).toBe('cpu')
  })
})
