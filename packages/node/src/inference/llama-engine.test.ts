import { afterAll, describe, expect, it } from 'vitest'
import type { Sampling } from '@meshwork/protocol'
import { GenerationAbortedError } from './inference-engine.ts'
import { createLlamaEngine } from './llama-engine.ts'

const MODELS = new URL('../../../../../shared/models/', import.meta.url).pathname
const sampling: Sampling = {
  temperature: 0.7,
  top_p: 0.9,
  top_k: 40,
  repeat_penalty: 1.1,
  frequency_penalty: 0,
  presence_penalty: 0,
  max_tokens: 40,
  context_length: 8000,
}

describe('llama engine', () => {
  const engine = createLlamaEngine({ gpu: false, threads: 1 })
  afterAll(() => engine.dispose())

  it('streams spaced text from stories260K with a plain transcript and counts tokens', async () => {
    const model = await engine.load({
      id: 'm1',
      name: 'stories260K',
      path: `${MODELS}stories260K.gguf`,
    })
    expect(model.settings).toEqual({ threads: 1, contextSize: 2048, promptFormat: 'plain' })
    const chunks: string[] = []
    const res = await model.generate(
      { messages: [{ role: 'user', content: 'Once upon a time there was a cat.' }], sampling },
      { onText: (t) => chunks.push(t) },
    )
    const text = chunks.join('')
    expect(chunks.length).toBeGreaterThan(1)
    expect(text).toMatch(/[a-z]+ [a-z]+/i)
    expect(res.tokensInput).toBeGreaterThan(5)
    expect(res.tokensOutput).toBeGreaterThan(0)
    expect(res.tokensOutput).toBeLessThanOrEqual(40)
    await model.unload()
  })

  it('caps the context to the model and aborts a running generation', async () => {
    const model = await engine.load({
      id: 'm2',
      name: 'tiny-random',
      path: `${MODELS}llama-2-tiny-random.gguf`,
    })
    expect(model.settings.contextSize).toBe(4096)
    const ac = new AbortController()
    const chunks: string[] = []
    const run = model.generate(
      {
        messages: [{ role: 'user', content: 'Hello' }],
        sampling: { ...sampling, max_tokens: 3000, temperature: 1 },
      },
      {
        signal: ac.signal,
        onText: (t) => {
          chunks.push(t)
          if (chunks.length === 5) ac.abort()
        },
      },
    )
    await expect(run).rejects.toBeInstanceOf(GenerationAbortedError)
    expect(chunks.length).toBeLessThan(100)
    // The sequence is free again after an abort.
    const res = await model.generate(
      { messages: [{ role: 'user', content: 'Hi' }], sampling: { ...sampling, max_tokens: 5 } },
      { onText: () => {} },
    )
    expect(res.tokensOutput).toBeGreaterThan(0)
    await model.unload()
  })

  it('uses LlamaChat when a chat template format is chosen', async () => {
    const chatEngine = createLlamaEngine({ gpu: false, threads: 1, promptFormat: 'chat-template' })
    const model = await chatEngine.load({
      id: 'm3',
      name: 'tiny-random',
      path: `${MODELS}llama-2-tiny-random.gguf`,
    })
    expect(model.settings.promptFormat).toBe('chat-template')
    const chunks: string[] = []
    const res = await model.generate(
      {
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
        ],
        sampling: { ...sampling, max_tokens: 8 },
      },
      { onText: (t) => chunks.push(t) },
    )
    expect(res.tokensOutput).toBeGreaterThan(0)
    expect(res.tokensInput).toBeGreaterThan(3)
    expect(chunks.join('').length).toBeGreaterThan(0)
    await chatEngine.dispose()
  })
})
