import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sampling } from '@meshwork/protocol'
import {
  FAKE_OPENAI_WORDS,
  startFakeOpenAiServer,
  type FakeOpenAiServer,
} from '../test-support/fake-openai-server.ts'
import { GenerationAbortedError, ModelLoadError } from './inference-engine.ts'
import { createUpstreamEngine } from './upstream-engine.ts'

const sampling: Sampling = {
  temperature: 0.5,
  top_p: 0.9,
  top_k: 40,
  repeat_penalty: 1.1,
  frequency_penalty: 0.1,
  presence_penalty: 0.2,
  max_tokens: 16,
  context_length: 8000,
}

describe('upstream engine', () => {
  let server: FakeOpenAiServer
  beforeAll(async () => {
    server = await startFakeOpenAiServer()
  })
  afterAll(() => server.close())

  it('streams chunks and reports the usage the server sent', async () => {
    const engine = createUpstreamEngine({ url: `${server.url}/`, model: 'tiny' })
    expect(engine.needsModelFile).toBe(false)
    const model = await engine.load({ id: 'm', name: 'catalogue-name', path: null })
    const chunks: string[] = []
    const res = await model.generate(
      { messages: [{ role: 'user', content: 'hi' }], sampling },
      { onText: (t) => chunks.push(t) },
    )
    expect(chunks).toEqual(FAKE_OPENAI_WORDS)
    expect(res).toEqual({ tokensInput: 7, tokensOutput: 4, stopReason: 'stop' })
    expect(server.bodies.at(-1)).toMatchObject({
      model: 'tiny',
      stream: true,
      max_tokens: 16,
      presence_penalty: 0.2,
    })
    expect(server.bodies.at(-1)).not.toHaveProperty('stop')
    expect(server.bodies.at(-1)).not.toHaveProperty('seed')
  })

  it("passes the job's stop sequences and seed to the upstream server", async () => {
    const engine = createUpstreamEngine({ url: server.url, model: 'tiny' })
    const model = await engine.load({ id: 'm', name: 'catalogue-name', path: null })
    await model.generate(
      {
        messages: [{ role: 'user', content: 'hi' }],
        sampling: { ...sampling, stop: ['\n\n', 'END'], seed: 7 },
      },
      { onText: () => {} },
    )
    expect(server.bodies.at(-1)).toMatchObject({ stop: ['\n\n', 'END'], seed: 7, top_p: 0.9 })
  })

  it('aborts a stream and refuses an unreachable server', async () => {
    const engine = createUpstreamEngine({ url: server.url })
    const model = await engine.load({ id: 'm', name: 'catalogue-name', path: null })
    const ac = new AbortController()
    const chunks: string[] = []
    const run = model.generate(
      { messages: [{ role: 'user', content: 'slow' }], sampling },
      { signal: ac.signal, onText: (t) => (chunks.push(t), chunks.length === 3 && ac.abort()) },
    )
    await expect(run).rejects.toBeInstanceOf(GenerationAbortedError)
    expect(chunks).toHaveLength(3)
    expect(server.bodies.at(-1)).toMatchObject({ model: 'catalogue-name' })

    const dead = createUpstreamEngine({ url: 'http://127.0.0.1:9' })
    await expect(dead.load({ id: 'm', name: 'x', path: null })).rejects.toBeInstanceOf(
      ModelLoadError,
    )
  })
})
