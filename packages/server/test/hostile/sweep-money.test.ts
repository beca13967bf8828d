/**
 * Hostile callers on the money paths, from the outside: API keys, `/v1/chat/completions`, chat
 * send and cancel. Each case is a bug found by a sweep: it failed before its fix. SQLite and
 * PostgreSQL.
 */
import type { KyselyPlugin } from 'kysely'
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_PROMPT_LENGTH } from '../../src/apis/input-limits.ts'
import { lockKeyRoom } from '../../src/core/api-keys/api-keys.ts'
import { toUnits } from '../../src/core/ledger/credits.ts'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode, streamThenWait } from '../support/hostile-node.ts'
import { txsOf } from '../support/ledger.ts'
import { postJson, servingNode, waitUntil } from '../support/network.ts'

describe.each(dialects)('[%s] hostile callers on the money paths', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    stories = await modelId(server)
  })
  afterAll(() => server.stop())

  const newKey = async (pb: PocketBase, body: object) => {
    const res = await fetch(new URL('/api/keys', server.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: pb.authStore.token },
      body: JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as { key: string } }
  }
  const complete = async (key: string, body: object) => {
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as { error?: { type: string } } }
  }
  const hi = { model: 'stories260K', messages: [{ role: 'user', content: 'hi' }] }

  it('a spending limit finer than a thousandth is refused when the key is made, never a 500 on use', async () => {
    const { node } = await servingNode(server, stories)
    try {
      const pb = await signUp(server, 'finelimit')
      // Each of these passed the old check (within 1e-6 of a thousandth) and made every call
      // with the key fail in the ledger's exact conversion.
      for (const spend_limit of [1e-10, 0.0010000001, 5.0000000005]) {
        expect((await newKey(pb, { name: 'fine', spend_limit })).status).toBe(400)
      }
      // A limit of one thousandth is exact: kept, and a call it cannot pay for is a 402.
      const tiny = await newKey(pb, { name: 'tiny', spend_limit: 0.001 })
      expect(tiny.status).toBe(200)
      const refused = await complete(tiny.body.key, hi)
      expect(refused.status).toBe(402)
      expect(refused.body.error?.type).toBe('insufficient_quota')
      expect(node.jobs).toHaveLength(0)
    } finally {
      node.kill()
    }
  })

  it('a /v1 body over 1 MiB is refused in OpenAI shape, declared or chunked, never a 500', async () => {
    const pb = await signUp(server, 'bigbody')
    const { key } = (await newKey(pb, { name: 'big' })).body
    const tooBig = new Uint8Array(1024 * 1024 + 1).fill(32)
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < tooBig.length; at += 64 * 1024)
          controller.enqueue(tooBig.subarray(at, at + 64 * 1024))
        controller.close()
      },
    })
    for (const body of [tooBig, chunked]) {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
        duplex: 'half',
      } as RequestInit)
      expect(res.status).toBe(400)
      expect(res.headers.get('connection')).toBe('close')
      expect(await res.json()).toMatchObject({
        error: { type: 'invalid_request_error', message: 'The request body is too large.' },
      })
    }
  })

  it("bounds a quote's prompt as a send's: counting it must not freeze the coordinator", async () => {
    // With a model's tokenizer (the model mirror), a 300,000-character CJK prompt (900 kB, within
    // the body limit) took about a minute of the event loop to count; the refusal is what keeps
    // that out, so it is what is asserted here (this server meters without a tokenizer).
    const pb = await signUp(server, 'quoter')
    const quote = (prompt: string) =>
      postJson(server, '/api/chat/quote', { model_id: stories, prompt }, pb.authStore.token)
    const longest = '\u4e00'.repeat(MAX_PROMPT_LENGTH)
    expect((await quote(longest)).status).toBe(200)
    expect(await quote(longest + '\u4e00')).toMatchObject({
      status: 400,
      body: { message: `Prompt is too long (at most ${MAX_PROMPT_LENGTH} characters)` },
    })
  })
})

describe.each(dialects)('[%s] the chat send limit', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect, { chatRateLimit: 2 })
    stories = await modelId(server)
  })
  afterAll(() => server.stop())

  it('counts a regenerate as a send: it is a new request, charged like one', async () => {
    const { node } = await servingNode(server, stories)
    try {
      const pb = await signUp(server, 'regen')
      const answered: string[] = []
      for (let i = 0; i < 2; i++) {
        const { id } = await pb.collection('conversations').create({ title: 'New Chat' })
        const body = { conversation_id: id, model_id: stories, prompt: 'Hello' }
        const sent = await postJson(server, '/api/chat/send', body, pb.authStore.token)
        expect(sent.status).toBe(200)
        answered.push(String(sent.body.request_id))
      }
      const ended = async (id: string) =>
        (await pb.collection('requests').getOne(id)).status === 'completed'
      await waitUntil(async () => (await ended(answered[0])) && ended(answered[1]), 5000, 'answers')
      // The minute's two sends are used: a new request through regenerate waits like a send.
      for (const id of answered) {
        const again = await postJson(
          server,
          '/api/chat/regenerate',
          { request_id: id },
          pb.authStore.token,
        )
        expect(again.status).toBe(429)
      }
      expect(node.jobs).toHaveLength(2)
    } finally {
      node.kill()
    }
  })

  it('limits quotes: a flood is refused with 429, long prompts weigh more, sends are counted apart', async () => {
    // Unlimited before: each quote counts a prompt's tokens on the event loop. Two sends a minute
    // allow twenty quote points; a quote of the longest prompt weighs eight.
    const pb = await signUp(server, 'quoteflood')
    const quote = (prompt: string) =>
      postJson(server, '/api/chat/quote', { model_id: stories, prompt }, pb.authStore.token)
    const flood = await Promise.all(Array.from({ length: 30 }, (_, i) => quote(`Hello ${i}`)))
    expect(flood.filter((r) => r.status === 200)).toHaveLength(20)
    const refused = flood.filter((r) => r.status === 429)
    expect(refused).toHaveLength(10)
    expect(refused[0].body).toEqual({ status: 429, message: 'Too Many Requests.', data: {} })

    // Another user typing is untouched; two of the longest prompts leave room for four short ones.
    const honest = await signUp(server, 'quotehonest')
    const ask = (prompt: string) =>
      postJson(server, '/api/chat/quote', { model_id: stories, prompt }, honest.authStore.token)
    const longest = 'x'.repeat(MAX_PROMPT_LENGTH)
    for (const prompt of [longest, longest, 'a', 'ab', 'abc', 'abcd'])
      expect((await ask(prompt)).status).toBe(200)
    expect((await ask('abcde')).status).toBe(429)

    // The flooder's sends are counted by the send limit, not by its quotes.
    const { node } = await servingNode(server, stories)
    try {
      const { id } = await pb.collection('conversations').create({ title: 'New Chat' })
      const body = { conversation_id: id, model_id: stories, prompt: 'Hello' }
      const sent = await postJson(server, '/api/chat/send', body, pb.authStore.token)
      expect(sent.status).toBe(200)
    } finally {
      node.kill()
    }
  })
})

/**
 * PostgreSQL reads each statement of a transaction at its own moment (READ COMMITTED): a key's
 * spending summed in two statements could miss a request settled between them (its hold gone
 * from the second, its debit not yet in the first), so a send sized its hold as if that request
 * had cost nothing and the key passed its limit. SQLite has one writer: a settlement cannot
 * commit inside a send's transaction there, so this interleaving exists on PostgreSQL only.
 */
describe.each(dialects.filter((d) => d === 'postgres'))(
  '[%s] a key settling mid-send',
  (dialect) => {
    let server: TestServer
    let stories: string
    beforeAll(async () => {
      server = await startTestServer(dialect, {}, { network: { scheduler: { stallMs: 120_000 } } })
      stories = await modelId(server)
    })
    afterAll(() => server.stop())

    it('counts a request settled while the room is read, as its hold or as its debit', async () => {
      const { node } = await hostileNode(server, stories)
      node.behaviour = streamThenWait('Once upon a time there was')
      try {
        const pb = await signUp(server, 'midsettle')
        const made = await fetch(new URL('/api/keys', server.url), {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: pb.authStore.token },
          body: JSON.stringify({ name: 'capped', spend_limit: 150 }),
        })
        const { id: keyId, key } = (await made.json()) as { id: string; key: string }
        const call = fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'stories260K',
            messages: [{ role: 'user', content: 'Go' }],
          }),
        })
        const job = await node.firstJob()
        const db = server.core.database.db
        const request = () =>
          db
            .selectFrom('requests')
            .selectAll()
            .where('id', '=', job.request_id)
            .executeTakeFirstOrThrow()
        await waitUntil(async () => (await request()).status === 'processing', 5000, 'processing')
        const reserved = Number((await request()).reserved)

        // The next send's room is read; after its second statement the running request settles.
        let statements = 0
        const settleMidway: KyselyPlugin = {
          transformQuery: (args) => args.node,
          transformResult: async (args) => {
            if (++statements === 2) {
              node.done(job, 6)
              await waitUntil(async () => (await request()).status === 'completed', 5000, 'settled')
            }
            return args.result
          },
        }
        const room = await db
          .transaction()
          .execute((trx) => lockKeyRoom(trx.withPlugin(settleMidway), keyId))
        expect((await call).status).toBe(200)
        const [debit] = (await txsOf(server, pb.authStore.record!.id)).filter(
          (t) => t.type === 'debit_inference_request',
        )
        const cost = toUnits(Number(debit.amount))
        expect(cost).toBeGreaterThan(0)
        expect([toUnits(150) - reserved, toUnits(150) - cost]).toContain(room)
      } finally {
        node.kill()
      }
    })
  },
)
