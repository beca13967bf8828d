/**
 * Sends the balance cannot pay for, as a way around the quote limit: quotes are limited because
 * counting a long prompt with the model's tokenizer takes the coordinator's time, and a send
 * counts its prompt the same way before it sizes its hold. A send refused afterwards for want of
 * credits gave its count back to the send limit, as a refused body does, so an account that can
 * never pay (a new one: 1,000 credits hold at most about 4,000 characters) sent the longest prompt
 * as often as it liked, each counted in full and refused. Now only a send refused before its
 * prompt is counted gives its count back; one refused for credits keeps it. SQLite and PostgreSQL.
 */
import { modelMirror } from '@meshwork/test-kit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_PROMPT_LENGTH } from '../../src/apis/input-limits.ts'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { postJson, servingNode, type FakeNode } from '../support/network.ts'

describe.each(dialects)('[%s] sends refused for want of credits', (dialect) => {
  let server: TestServer
  let stories: string
  let node: FakeNode
  beforeAll(async () => {
    // The coordinator counts with the model's tokenizer (its file is in the mirror).
    server = await startTestServer(dialect, { chatRateLimit: 3, modelMirror })
    stories = await modelId(server)
    node = (await servingNode(server, stories)).node
  })
  afterAll(async () => {
    node?.kill()
    await server?.stop()
  })

  it('count against the send limit', async () => {
    const pb = await signUp(server, 'cannotpay')
    const { id } = await pb.collection('conversations').create({ title: 'New Chat' })
    // Letters in no pattern: thousands of tokens however they are counted.
    let seed = 7
    const letters = Array.from({ length: MAX_PROMPT_LENGTH }, () => {
      seed = (seed * 48271) % 2147483647
      return String.fromCharCode(97 + (seed % 26))
    }).join('')
    const body = { conversation_id: id, model_id: stories, prompt: letters }
    const statuses: number[] = []
    for (let i = 0; i < 8; i++)
      statuses.push((await postJson(server, '/api/chat/send', body, pb.authStore.token)).status)
    // Before: eight 400s, each prompt counted in full; as many as the caller liked.
    expect(statuses).toEqual([400, 400, 400, 429, 429, 429, 429, 429])
    expect(node.jobs).toHaveLength(0)
  })

  it('a body refused before its prompt is counted still gives its count back', async () => {
    const pb = await signUp(server, 'typo')
    for (let i = 0; i < 5; i++) {
      const res = await postJson(
        server,
        '/api/chat/send',
        { conversation_id: 'nope', model_id: stories, prompt: 'hi' },
        pb.authStore.token,
      )
      expect(res.status).toBe(403)
    }
    const { id } = await pb.collection('conversations').create({ title: 'New Chat' })
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: id, model_id: stories, prompt: 'hi' },
      pb.authStore.token,
    )
    expect(sent.status).toBe(200)
  })
})
