/**
 * Red team: a node that ignores the caller's stop sequences. The coordinator passed `stop` to the
 * node in the offer and trusted the node to cut the answer before the first one. A node that went
 * on past the stop (an honest model's own text, so no canary or spot check can tell) was paid for
 * every token up to the output cap, and the caller received text after its stop sequence, which
 * OpenAI's API promises never to send. The coordinator now cuts the text itself, and while the
 * answer streams holds back an end that could still begin a stop sequence.
 * SQLite (the check is not about the database), with the model's tokenizer.
 */
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { signUp, startTestServer, type TestServer } from '../harness.ts'
import { expectAuditPasses } from '../support/ledger.ts'
import { servingNode } from '../support/network.ts'
import { modelMirror as mirror } from '@meshwork/test-kit'

describe('stop sequences a node ignores', () => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    // With the model's tokenizer (from the mirror), as a coordinator serving it has: billed in
    // tokens of the text that stands.
    server = await startTestServer(
      'sqlite',
      { modelMirror: mirror },
      { network: { maxOutputTokens: 100 } },
    )
    stories = await modelId(server)
  })
  afterAll(async () => {
    await server?.stop()
  })

  async function clientOf(name: string) {
    const pb = await signUp(server, name)
    const res = await fetch(new URL('/api/keys', server.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: pb.authStore.token },
      body: JSON.stringify({ name: 'agent loop' }),
    })
    const { key } = (await res.json()) as { key: string }
    return new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 })
  }

  it('streamed, a stop sequence split across chunks is never shown, nor what follows it', async () => {
    const { node } = await servingNode(server, stories)
    node.chunks = ['Once', ' upon', '\nObserv', 'ation:', ' the', ' node', ' went', ' on']
    node.chunkDelayMs = 150 // longer than the partial events' coalescing: each piece goes out alone
    try {
      const client = await clientOf('streamer')
      const stream = await client.chat.completions.create({
        model: 'stories260K',
        messages: [{ role: 'user', content: 'Think, then act.' }],
        stop: ['\nObservation:'],
        stream: true,
        stream_options: { include_usage: true },
      })
      let shown = ''
      let usage: OpenAI.CompletionUsage | undefined
      for await (const chunk of stream) {
        shown += chunk.choices[0]?.delta?.content ?? ''
        usage = chunk.usage ?? usage
      }
      expect(shown).toBe('Once upon')
      expect(usage!.completion_tokens).toBeLessThanOrEqual(2)
      await expectAuditPasses(server)
    } finally {
      node.kill()
    }
  })

  it('the answer is cut before the stop sequence and billed only up to it', async () => {
    const { node } = await servingNode(server, stories)
    // What the model wrote: a stop sequence after two words, then more (the node sends it all).
    node.chunks = [
      'Once',
      ' upon',
      '\nObservation:',
      ' the',
      ' node',
      ' went',
      ' on',
      ' and',
      ' on',
    ]
    node.chunkDelayMs = 5
    try {
      const client = await clientOf('agent')
      const answer = await client.chat.completions.create({
        model: 'stories260K',
        messages: [{ role: 'user', content: 'Think, then act.' }],
        stop: ['\nObservation:'],
      })
      expect(node.jobs[0].sampling.stop).toEqual(['\nObservation:'])
      const content = answer.choices[0].message.content ?? ''
      // OpenAI: "The returned text will not contain the stop sequence."
      expect(content).not.toContain('Observation:')
      expect(content).toBe('Once upon')
      expect(answer.usage!.completion_tokens).toBeLessThanOrEqual(2)
      await expectAuditPasses(server)
    } finally {
      node.kill()
    }
  })
})
