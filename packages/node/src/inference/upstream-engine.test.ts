import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sampling } from '@meshwork/protocol'
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
  let server: Server
  let url = ''
  const bodies: Record<string, unknown>[] = []

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/v1/models') return res.end(JSON.stringify({ data: [{ id: 'tiny' }] }))
      let raw = ''
      req.on('data', (c) => (raw += c))
      req.on('end', () => {
        const body = JSON.parse(raw) as { messages: { content: string }[] }
        bodies.push(body)
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        const words = ['Hello', ' there', ',', ' friend']
        const slow = body.messages[0].content === 'slow'
        let i = 0
        const tick = () => {
          if (res.destroyed) return
          if (i < words.length || slow) {
            const delta = { content: words[i % words.length] }
            res.write(`data: ${JSON.stringify({ choices: [{ delta, finish_reason: null }] })}\n\n`)
            i++
            setTimeout(tick, slow ? 20 : 0)
            return
          }
          const usage = { prompt_tokens: 7, completion_tokens: 4 }
          res.write(
            `data: ${JSON.stringify({ choices: [{ delta: {}, finish_reason: 'stop' }] })}\n\n`,
          )
          res.write(`data: ${JSON.stringify({ choices: [], usage })}\n\n`)
          res.end('data: [DONE]\n\n')
        }
        tick()
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise((r) => server.close(r)))

  it('streams chunks and reports the usage the server sent', async () => {
    const engine = createUpstreamEngine({ url: `${url}/`, model: 'tiny' })
    expect(engine.needsModelFile).toBe(false)
    const model = await engine.load({ id: 'm', name: 'catalogue-name', path: null })
    const chunks: string[] = []
    const res = await model.generate(
      { messages: [{ role: 'user', content: 'hi' }], sampling },
      { onText: (t) => chunks.push(t) },
    )
    expect(chunks).toEqual(['Hello', ' there', ',', ' friend'])
    expect(res).toEqual({ tokensInput: 7, tokensOutput: 4, stopReason: 'stop' })
    expect(bodies.at(-1)).toMatchObject({
      model: 'tiny',
      stream: true,
      max_tokens: 16,
      presence_penalty: 0.2,
    })
  })

  it('aborts a stream and refuses an unreachable server', async () => {
    const engine = createUpstreamEngine({ url })
    const model = await engine.load({ id: 'm', name: 'catalogue-name', path: null })
    const ac = new AbortController()
    const chunks: string[] = []
    const run = model.generate(
      { messages: [{ role: 'user', content: 'slow' }], sampling },
      { signal: ac.signal, onText: (t) => (chunks.push(t), chunks.length === 3 && ac.abort()) },
    )
    await expect(run).rejects.toBeInstanceOf(GenerationAbortedError)
    expect(chunks).toHaveLength(3)
    expect(bodies.at(-1)).toMatchObject({ model: 'catalogue-name' })

    const dead = createUpstreamEngine({ url: 'http://127.0.0.1:9' })
    await expect(dead.load({ id: 'm', name: 'x', path: null })).rejects.toBeInstanceOf(
      ModelLoadError,
    )
  })
})
