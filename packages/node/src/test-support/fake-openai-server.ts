/**
 * @module fake-openai-server
 * Test helper: a tiny OpenAI-compatible server (`/v1/models`, streaming `/v1/chat/completions`).
 * A first message of exactly 'slow' streams forever, one word every 20 ms.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface FakeOpenAiServer {
  url: string
  /** Parsed bodies of every chat completion request. */
  bodies: Record<string, unknown>[]
  close(): Promise<void>
}

export const FAKE_OPENAI_WORDS = ['Hello', ' there', ',', ' friend']

export async function startFakeOpenAiServer(): Promise<FakeOpenAiServer> {
  const bodies: Record<string, unknown>[] = []
  const server: Server = createServer((req, res) => {
    if (req.url === '/v1/models') return res.end(JSON.stringify({ data: [{ id: 'tiny' }] }))
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      const body = JSON.parse(raw) as { messages: { content: string }[] }
      bodies.push(body)
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const slow = body.messages[0].content === 'slow'
      let i = 0
      const tick = () => {
        if (res.destroyed) return
        if (i < FAKE_OPENAI_WORDS.length || slow) {
          const delta = { content: FAKE_OPENAI_WORDS[i % FAKE_OPENAI_WORDS.length] }
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
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: () => {
      server.closeAllConnections()
      return new Promise((r) => server.close(() => r()))
    },
  }
}
