/**
 * Hostile callers on the OpenAI-compatible API (`/v1`), with a valid key and without: bodies
 * that never end, pathological bodies, a client abandoning its stream, a key revoked mid-stream.
 * The cases marked "found by the sweep" failed before their fix; the others pin behaviour that was
 * already right and was not covered elsewhere. SQLite and PostgreSQL, the ledger audited after.
 */
import net from 'node:net'
import OpenAI from 'openai'
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode, streamThenWait } from '../support/hostile-node.ts'
import { balanceOf, expectAuditPasses, txsOf } from '../support/ledger.ts'
import { servingNode, waitUntil } from '../support/network.ts'

/** The body deadline these tests run with (30 s in production). */
const BODY_DEADLINE_MS = 1000

describe.each(dialects)('[%s] hostile callers on /v1', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      {},
      {
        network: { scheduler: { stallMs: 120_000 } },
        openai: { bodyDeadlineMs: BODY_DEADLINE_MS },
      },
    )
    stories = await modelId(server)
  })
  afterAll(async () => {
    await expectAuditPasses(server)
    await server.stop()
  })

  const userId = (pb: PocketBase) => pb.authStore.record!.id
  const keysCall = async (pb: PocketBase, method: string, path = '', body?: object) =>
    fetch(new URL(`/api/keys${path}`, server.url), {
      method,
      headers: { 'content-type': 'application/json', authorization: pb.authStore.token },
      body: body && JSON.stringify(body),
    })
  const newKey = async (pb: PocketBase) =>
    (await (await keysCall(pb, 'POST', '', { name: 'k' })).json()) as { id: string; key: string }
  const client = (key: string) =>
    new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 })
  const debits = async (pb: PocketBase) =>
    (await txsOf(server, userId(pb))).filter((t) => t.type === 'debit_inference_request')
  const requestRows = (pb: PocketBase) =>
    server.core.database.db
      .selectFrom('requests')
      .selectAll()
      .where('user', '=', userId(pb))
      .execute()

  /**
   * Writes the head of a POST /v1/chat/completions and `firstBytes` of a body that never ends;
   * resolves with what the server answered and whether it closed the connection.
   */
  const neverEndingBody = (authorization: string, framing: string, firstBytes: string) =>
    new Promise<{ answer: string; closed: boolean; ms: number }>((resolve) => {
      const started = Date.now()
      const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1')
      let answer = ''
      let settled = false
      const done = (closed: boolean) => {
        if (settled) return
        settled = true
        socket.destroy()
        resolve({ answer, closed, ms: Date.now() - started })
      }
      socket.on('data', (d) => (answer += String(d)))
      socket.on('error', () => {})
      socket.on('close', () => done(true))
      // Well past the deadline, long before Node's own five minutes.
      setTimeout(() => done(false), BODY_DEADLINE_MS + 4000)
      socket.write(
        'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
          `Authorization: ${authorization}\r\n${framing}\r\n\r\n${firstBytes}`,
      )
    })

  it('found by the sweep: a caller without a valid key is refused before its body, which may never end', async () => {
    // Before: the whole body was read first, so a body that never ends held the connection for
    // Node's five minutes, with no answer at all.
    for (const framing of ['Transfer-Encoding: chunked', 'Content-Length: 100000']) {
      const body = framing.startsWith('Transfer') ? '5\r\n{"mod\r\n' : '{"mod'
      const got = await neverEndingBody('Bearer mw-nobody', framing, body)
      expect(got.answer).toMatch(/^HTTP\/1\.1 401 /)
      expect(got.answer.toLowerCase()).toContain('connection: close')
      expect(got.answer).toContain('"code":"invalid_api_key"')
      expect(got.closed).toBe(true)
      expect(got.ms).toBeLessThan(BODY_DEADLINE_MS)
    }
  })

  it('found by the sweep: a body that never ends is cut at the deadline with 408, nothing held', async () => {
    // Before: a key's call waited for the rest of its body for Node's five minutes.
    const pb = await signUp(server, 'slowbody')
    const { key } = await newKey(pb)
    for (const framing of ['Transfer-Encoding: chunked', 'Content-Length: 100000']) {
      const body = framing.startsWith('Transfer') ? '5\r\n{"mod\r\n' : '{"mod'
      const got = await neverEndingBody(`Bearer ${key}`, framing, body)
      expect(got.answer).toMatch(/^HTTP\/1\.1 408 /)
      expect(got.answer.toLowerCase()).toContain('connection: close')
      expect(got.answer).toContain(
        '"type":"invalid_request_error","param":null,"code":"request_timeout"',
      )
      expect(got.closed).toBe(true)
      expect(got.ms).toBeGreaterThanOrEqual(BODY_DEADLINE_MS - 50)
    }
    expect(await requestRows(pb)).toEqual([])
    expect(await balanceOf(server, userId(pb))).toMatchObject({ balance: 1000, held: 0 })
  })

  it('answers pathological bodies 400 in OpenAI shape, never offering a job or holding credits', async () => {
    const { node } = await servingNode(server, stories)
    try {
      const pb = await signUp(server, 'bodies')
      const { key } = await newKey(pb)
      const hi = { model: 'stories260K', messages: [{ role: 'user', content: 'hi' }] }
      const json = (extra: object) => JSON.stringify({ ...hi, ...extra })
      const bodies: Array<[string, string]> = [
        ['deep nesting', '['.repeat(100_000) + ']'.repeat(100_000)],
        ['messages past the item limit', json({ messages: Array(3000).fill(hi.messages[0]) })],
        ['a stop list of thousands', json({ stop: Array(5000).fill('a') })],
        ['max_tokens of 1e400', json({}).replace('{', '{"max_tokens":1e400,')],
        ['max_tokens of 1e300', json({ max_tokens: 1e300 })],
        ['negative max_completion_tokens', json({ max_completion_tokens: -5 })],
        ['n of 0', json({ n: 0 })],
        ['stream as text', json({ stream: 'true' })],
        ['content null', json({ messages: [{ role: 'user', content: null }] })],
        ['a tool message', json({ messages: [{ role: 'tool', content: 'x', tool_call_id: 'a' }] })],
        ['an image part', json({ messages: [{ role: 'user', content: [{ type: 'image_url' }] }] })],
        ['an empty tools list', json({ tools: [] })],
        ['logprobs', json({ logprobs: true, top_logprobs: 5 })],
        ['a model object', json({ model: { name: 'stories260K' } })],
        ['a form body', 'model=stories260K'],
        ['a number', '42'],
      ]
      for (const [what, body] of bodies) {
        const res = await fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body,
        })
        expect([what, res.status]).toEqual([what, 400])
        expect((await res.json()).error).toMatchObject({ type: 'invalid_request_error' })
      }
      expect(node.jobs).toHaveLength(0)
      expect(await balanceOf(server, userId(pb))).toMatchObject({ balance: 1000, held: 0 })
    } finally {
      node.kill()
    }
  })

  it('a client abandoning its stream mid-answer stops the node and pays only what it received', async () => {
    const { node } = await hostileNode(server, stories)
    node.behaviour = streamThenWait('Once upon a time')
    try {
      const pb = await signUp(server, 'abandon')
      const { key } = await newKey(pb)
      const controller = new AbortController()
      const stream = await client(key).chat.completions.create(
        { model: 'stories260K', messages: [{ role: 'user', content: 'Tell me' }], stream: true },
        { signal: controller.signal },
      )
      let seen = ''
      try {
        for await (const chunk of stream) {
          seen += chunk.choices[0]?.delta.content ?? ''
          if (seen) controller.abort()
        }
      } catch (err) {
        if (!(err instanceof OpenAI.APIUserAbortError)) throw err
      }
      expect(seen).toBe('Once upon a time')
      const job = await node.firstJob()
      await waitUntil(() => node.cancelled(job), 5000, 'job_cancel')
      await waitUntil(
        async () => (await requestRows(pb))[0]?.status === 'cancelled',
        5000,
        'cancelled',
      )
      const [row] = await requestRows(pb)
      const [debit] = await debits(pb)
      const tokens = Number(row.tokens_input) + Number(row.tokens_output)
      expect(Number(row.tokens_output)).toBeGreaterThan(0)
      expect(Number(debit.amount)).toBeCloseTo(tokens, 3) // stories260K's multiplier is 1
      await waitUntil(
        async () => Number((await balanceOf(server, userId(pb))).held) === 0,
        5000,
        'hold released',
      )
    } finally {
      node.kill()
    }
  })

  it('a key revoked mid-stream finishes the answer it had paid the hold for; its next call is 401', async () => {
    const { node } = await hostileNode(server, stories)
    node.behaviour = streamThenWait('Once upon')
    try {
      const pb = await signUp(server, 'revoked')
      const { id, key } = await newKey(pb)
      const api = client(key)
      const stream = await api.chat.completions.create({
        model: 'stories260K',
        messages: [{ role: 'user', content: 'Tell me' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      const job = await node.firstJob()
      let text = ''
      let usage: OpenAI.CompletionUsage | null | undefined
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? ''
        if (text === 'Once upon' && !usage) {
          usage = null
          expect((await keysCall(pb, 'DELETE', `/${id}`)).status).toBe(204)
          node.chunk(job, ' a time')
          node.done(job, 4)
        }
        if (chunk.usage) usage = chunk.usage
      }
      expect(text).toBe('Once upon a time')
      const [debit] = await debits(pb)
      expect(Number(debit.amount)).toBeCloseTo(usage!.total_tokens, 3)
      await expect(api.models.list()).rejects.toMatchObject({ status: 401 })
    } finally {
      node.kill()
    }
  })
})
