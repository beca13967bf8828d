/**
 * The OpenAI-compatible API and API keys (issue 10) from the outside: the official `openai` client
 * and plain HTTP against a real coordinator, with scripted nodes over the real WebSocket (the
 * real llama.cpp path is in openai-end-to-end.test.ts).
 */
import { createHash } from 'node:crypto'
import OpenAI from 'openai'
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NODE_LOST_MESSAGE } from '../src/core/openai/completions.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { adjustBalance, balanceOf, txsOf } from './support/ledger.ts'
import { linkNode, FakeNode, serveModel, servingNode, waitUntil } from './support/network.ts'

describe.each(dialects)('[%s] OpenAI-compatible API and API keys', (dialect) => {
  let server: TestServer
  let stories: string

  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      {},
      { network: { scheduler: { stallMs: 2000, offerTimeoutMs: 2000 }, maxOutputTokens: 100 } },
    )
    stories = await modelId(server)
  })
  afterAll(async () => {
    await server?.stop()
  })

  const db = () => server.core.database.db
  const userId = (pb: PocketBase) => pb.authStore.record!.id
  const keysCall = async (pb: PocketBase | null, method: string, path = '', body?: unknown) => {
    const res = await fetch(new URL(`/api/keys${path}`, server.url), {
      method,
      headers: {
        'content-type': 'application/json',
        ...(pb ? { authorization: pb.authStore.token } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null }
  }
  const newKey = async (pb: PocketBase, name = 'My script', extra: object = {}) => {
    const res = await keysCall(pb, 'POST', '', { name, ...extra })
    expect(res.status).toBe(200)
    return res.body as { id: string; name: string; key: string; created: string }
  }
  const client = (key: string) =>
    new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 })
  // Credits as the API shows them (stored as integer thousandths).
  const balance = (user: string) => balanceOf(server, user)
  const debits = async (user: string) =>
    (await txsOf(server, user)).filter((t) => t.type === 'debit_inference_request')
  const requestRow = (id: string) =>
    db().selectFrom('requests').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  const requestId = (completionId: string) => completionId.replace(/^chatcmpl-/, '')
  /** The status and OpenAI error body of a failed client call. */
  const failure = async (call: Promise<unknown>) => {
    const err = (await call.then(
      () => {
        throw new Error('expected the call to fail')
      },
      (e: unknown) => e,
    )) as InstanceType<typeof OpenAI.APIError>
    expect(err).toBeInstanceOf(OpenAI.APIError)
    return { status: err.status, error: err.error as Record<string, unknown>, headers: err.headers }
  }

  it('creates keys shown once, stored as hashes, listed with a hint, invisible to other users', async () => {
    const pb = await signUp(server, 'keyholder')
    const other = await signUp(server, 'nosy')
    const created = await newKey(pb, 'Laptop')
    expect(Object.keys(created).sort()).toEqual(
      ['created', 'hint', 'id', 'key', 'last_used', 'name', 'spend_limit', 'spent'].sort(),
    )
    expect(created).toMatchObject({ name: 'Laptop', last_used: '', spend_limit: 0 })
    expect(created.key).toMatch(/^mw-[A-Za-z0-9]{43}$/)
    expect(created.created).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$/)
    const second = await newKey(pb, 'Server')
    expect(second.key).not.toBe(created.key)

    // Only the hash is stored: no column holds the secret.
    const row = await db()
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow()
    expect(row.key_hash).toBe(createHash('sha256').update(created.key).digest('hex'))
    expect(JSON.stringify(row)).not.toContain(created.key.slice(3))

    const list = await keysCall(pb, 'GET')
    expect(list.status).toBe(200)
    expect(list.body.map((k: { name: string }) => k.name)).toEqual(['Server', 'Laptop'])
    expect(list.body[1]).toEqual({
      id: created.id,
      name: 'Laptop',
      hint: `mw-…${created.key.slice(-4)}`,
      created: created.created,
      last_used: '',
      spend_limit: 0,
      spent: 0,
    })
    expect(JSON.stringify(list.body)).not.toContain(created.key.slice(3, 20))

    // Another user: sees none of them, cannot revoke them (404), nor read them as records.
    expect((await keysCall(other, 'GET')).body).toEqual([])
    expect((await keysCall(other, 'DELETE', `/${created.id}`)).status).toBe(404)
    expect((await other.collection('api_keys').getList()).items).toEqual([])
    await expect(other.collection('api_keys').getOne(created.id)).rejects.toMatchObject({
      status: 404,
    })
    // The owner reads them as records too, never the hash.
    const own = await pb.collection('api_keys').getOne(created.id)
    expect(own.name).toBe('Laptop')
    expect(own).not.toHaveProperty('key_hash')
    await expect(
      pb.collection('api_keys').create({ user: userId(pb), name: 'x' }),
    ).rejects.toMatchObject({
      status: 403,
    })
    await expect(
      pb.collection('api_keys').update(created.id, { spend_limit: 1 }),
    ).rejects.toMatchObject({
      status: 403,
    })

    // Guests, bad bodies, and an API key in place of a session.
    expect((await keysCall(null, 'GET')).status).toBe(401)
    expect((await keysCall(null, 'POST', '', { name: 'x' })).status).toBe(401)
    expect((await keysCall(pb, 'POST', '', { name: '' })).status).toBe(400)
    expect((await keysCall(pb, 'POST', '', { name: 'x'.repeat(101) })).status).toBe(400)
    expect((await keysCall(pb, 'POST', '', { name: 'x', spend_limit: -1 })).status).toBe(400)
    const withKey = await fetch(new URL('/api/keys', server.url), {
      headers: { authorization: `Bearer ${created.key}` },
    })
    expect(withKey.status).toBe(401)

    // Revoking: 204, gone from the list, a second revoke is a 404.
    expect((await keysCall(pb, 'DELETE', `/${second.id}`)).status).toBe(204)
    expect((await keysCall(pb, 'DELETE', `/${second.id}`)).status).toBe(404)
    expect((await keysCall(pb, 'GET')).body.map((k: { id: string }) => k.id)).toEqual([created.id])
  })

  it('caps the keys one user may hold', async () => {
    const pb = await signUp(server, 'hoarder')
    const made = await Promise.all(
      Array.from({ length: 52 }, (_, i) => keysCall(pb, 'POST', '', { name: `k${i}` })),
    )
    expect(made.filter((r) => r.status === 200)).toHaveLength(50)
    expect(made.filter((r) => r.status === 400)[0].body.message).toMatch(/at most 50 API keys/)
  })

  it('lists the models being served, in OpenAI list shape, leaving out unserved ones', async () => {
    const { node } = await servingNode(server, stories)
    const pb = await signUp(server, 'lister')
    const { key } = await newKey(pb)
    const page = await client(key).models.list()
    expect(page.data).toEqual([
      { id: 'stories260K', object: 'model', created: expect.any(Number), owned_by: 'meshwork' },
    ])
    expect(page.data[0].created).toBeGreaterThan(1_600_000_000)
    const raw = await fetch(`${server.url}/v1/models`, {
      headers: { authorization: `Bearer ${key}` },
    })
    expect(await raw.json()).toMatchObject({ object: 'list' })
    node.kill()
    const served = () =>
      db()
        .selectFrom('available_models')
        .select('node_count')
        .where('id', '=', stories)
        .executeTakeFirstOrThrow()
    await waitUntil(async () => Number((await served()).node_count) === 0, 10_000, 'node offline')
    expect((await client(key).models.list()).data).toEqual([])
  })

  it('answers a completion through the chat pipeline and bills exactly its usage', async () => {
    const { owner, node } = await servingNode(server, stories)
    const pb = await signUp(server, 'programmer')
    const { key, id: keyId } = await newKey(pb, 'Batch job')
    const messages = [
      { role: 'system' as const, content: 'You tell short stories.' },
      { role: 'user' as const, content: 'Tell me a story about a cat' },
    ]
    const answer = await client(key).chat.completions.create({
      model: 'stories260K',
      messages,
      temperature: 0.3,
      top_p: 0.5,
      seed: 42,
      stop: ['THE END'],
    })
    expect(answer).toMatchObject({
      object: 'chat.completion',
      model: 'stories260K',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Once upon a time' },
          finish_reason: 'stop',
        },
      ],
    })
    const input = Math.floor((messages[0].content.length + messages[1].content.length) / 4)
    expect(answer.usage).toEqual({
      prompt_tokens: input,
      completion_tokens: 4,
      total_tokens: input + 4,
    })

    // The job carried the client's sampling; the request has the key and no conversation.
    const job = node.jobs.at(-1)!
    expect(job.prompt.messages).toEqual(messages)
    expect(job.sampling).toMatchObject({
      temperature: 0.3,
      top_p: 0.5,
      seed: 42,
      stop: ['THE END'],
      max_tokens: 100,
    })
    const row = await requestRow(requestId(answer.id))
    expect(row).toMatchObject({
      api_key: keyId,
      conversation: '',
      user: userId(pb),
      status: 'completed',
      prompt: messages[1].content,
      response: 'Once upon a time',
      tokens_input: input,
      tokens_output: 4,
      reserved: 0,
    })

    // Billing: the usage times the multiplier (1), debited once, earned by the node's owner.
    const cost = answer.usage!.total_tokens * 1
    expect((await debits(userId(pb))).map((t) => [t.amount, t.request])).toEqual([[cost, row.id]])
    expect(await balance(userId(pb))).toMatchObject({
      balance: 1000 - cost,
      held: 0,
      total_spent: cost,
    })
    await waitUntil(
      async () => Number((await balance(userId(owner))).total_earned) === cost,
      5000,
      'earned',
    )

    // The Profile's history names the key (request.api_key expands for its owner).
    const history = await pb
      .collection('user_credit_txs')
      .getFullList({ expand: 'request.api_key' })
    const spent = history.find((t) => t.type === 'debit_inference_request')!
    expect(spent.expand?.request?.expand?.api_key?.name).toBe('Batch job')
    const listed = (await keysCall(pb, 'GET')).body[0]
    expect(listed.last_used).not.toBe('')
    expect(listed.spent).toBe(cost)
    node.kill()
  })

  it('streams chunk events, a usage chunk and [DONE]; max_tokens caps the job and says length', async () => {
    const { node } = await servingNode(server, stories)
    node.chunkDelayMs = 60
    const pb = await signUp(server, 'streamer')
    const { key } = await newKey(pb)
    const stream = await client(key).chat.completions.create({
      model: 'stories260K',
      messages: [{ role: 'user', content: 'Go on' }],
      stream: true,
      stream_options: { include_usage: true },
    })
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = []
    for await (const chunk of stream) chunks.push(chunk)
    const texts = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? ''))
    expect(texts.filter(Boolean).length).toBeGreaterThan(1)
    expect(texts.join('')).toBe('Once upon a time')
    expect(chunks[0].choices[0].delta.role).toBe('assistant')
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id)).toBe(
      true,
    )
    expect(chunks.at(-2)!.choices[0].finish_reason).toBe('stop')
    const usage = chunks.at(-1)!
    expect(usage.choices).toEqual([])
    expect(usage.usage).toEqual({ prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 })
    expect((await debits(userId(pb))).map((t) => t.amount)).toEqual([5])

    // The wire format itself: data lines, the last one [DONE]; max_completion_tokens caps the job.
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'stories260K',
        messages: [{ role: 'user', content: 'Again' }],
        stream: true,
        max_completion_tokens: 4,
      }),
    })
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const events = (await res.text()).split('\n\n').filter(Boolean)
    expect(events.every((e) => e.startsWith('data: '))).toBe(true)
    expect(events.at(-1)).toBe('data: [DONE]')
    const last = JSON.parse(events.at(-2)!.slice(6))
    expect(last.choices[0].finish_reason).toBe('length')
    expect(last).not.toHaveProperty('usage')
    expect(node.jobs.at(-1)!.sampling.max_tokens).toBe(4)
    node.kill()
  })

  it('answers every error in OpenAI shape with its status', async () => {
    const pb = await signUp(server, 'erring')
    const { key, id } = await newKey(pb)
    const api = client(key)
    const ask = (body: Record<string, unknown>) =>
      api.chat.completions.create({
        model: 'stories260K',
        messages: [{ role: 'user', content: 'hi' }],
        ...body,
      } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming)

    // 401: unknown, malformed and missing keys; a session token is no API key.
    for (const bad of ['mw-' + 'x'.repeat(43), 'sk-whatever', pb.authStore.token]) {
      expect(await failure(client(bad).models.list())).toMatchObject({
        status: 401,
        error: { type: 'invalid_request_error', code: 'invalid_api_key' },
      })
    }
    expect((await fetch(`${server.url}/v1/models`)).status).toBe(401)

    // 400: bodies that are not a completion request.
    expect(await failure(ask({ messages: [] }))).toMatchObject({
      status: 400,
      error: { param: 'messages' },
    })
    expect(await failure(ask({ temperature: 5 }))).toMatchObject({
      status: 400,
      error: { param: 'temperature' },
    })
    expect(await failure(ask({ n: 2 }))).toMatchObject({ status: 400, error: { param: 'n' } })
    expect(
      await failure(ask({ tools: [{ type: 'function', function: { name: 'f' } }] })),
    ).toMatchObject({
      status: 400,
      error: { param: 'tools' },
    })
    expect(await failure(ask({ stop: ['a', 'b', 'c', 'd', 'e'] }))).toMatchObject({ status: 400 })
    expect(
      await failure(ask({ messages: [{ role: 'user', content: 'x'.repeat(40_000) }] })),
    ).toMatchObject({
      status: 400,
      error: { code: 'context_length_exceeded' },
    })
    for (const raw of [
      '{nope',
      '[]',
      JSON.stringify({ model: 'stories260K', messages: [{ role: 'user', content: 'a\u0000b' }] }),
    ]) {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: raw,
      })
      expect(res.status).toBe(400)
      expect((await res.json()).error.type).toBe('invalid_request_error')
    }

    // 404: a model the catalogue does not have; 503: one no node serves.
    expect(await failure(ask({ model: 'gpt-4o' }))).toMatchObject({
      status: 404,
      error: { code: 'model_not_found', param: 'model' },
    })
    expect(await failure(ask({ model: 'llama-2-tiny-random' }))).toMatchObject({
      status: 503,
      error: { type: 'server_error' },
    })
    // Unknown /v1 paths answer in the same shape.
    const unknown = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    })
    expect(unknown.status).toBe(404)
    expect((await unknown.json()).error.code).toBe('unknown_url')

    // 402: not enough credits for the smallest answer; nothing is held or charged.
    const { node } = await servingNode(server, stories)
    await adjustBalance(server, userId(pb), -990)
    const poor = await failure(ask({ messages: [{ role: 'user', content: 'x'.repeat(200) }] }))
    expect(poor).toMatchObject({ status: 402, error: { code: 'insufficient_quota' } })
    expect(String(poor.error.message)).toMatch(/^Insufficient credits/)
    expect(await balance(userId(pb))).toMatchObject({ balance: 10, held: 0 })

    // A revoked key is refused at once, on every route.
    expect((await keysCall(pb, 'DELETE', `/${id}`)).status).toBe(204)
    expect(await failure(api.models.list())).toMatchObject({ status: 401 })
    expect(await failure(ask({}))).toMatchObject({ status: 401 })
    expect(node.jobs).toHaveLength(0)
    node.kill()
  })

  it('holds a key to its spending limit, atomically, and says so in the 402', async () => {
    const { node } = await servingNode(server, stories, server, 4)
    node.chunkDelayMs = 500
    const pb = await signUp(server, 'limited')
    const { key, id } = await newKey(pb, 'Capped', { spend_limit: 150 })
    const api = client(key)
    const ask = () =>
      api.chat.completions.create({
        model: 'stories260K',
        messages: [{ role: 'user', content: 'abcd' }],
      })
    // Four at once: holds of 1 + 100 each would pass 150, so the second is sized to what is left
    // (48 output tokens: a hold of 49) and the others are refused while those run.
    const results = await Promise.allSettled([ask(), ask(), ask(), ask()])
    const ok = results.filter((r) => r.status === 'fulfilled')
    const refused = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[]
    expect(ok.length).toBe(2)
    for (const r of refused) {
      expect(r.reason).toMatchObject({ status: 402 })
      expect(r.reason.error.message).toMatch(/spending limit/)
    }
    const offered = node.jobs.map((j) => j.sampling.max_tokens).sort((a, b) => a - b)
    expect(offered).toEqual([48, 100])
    const listed = (await keysCall(pb, 'GET')).body.find((k: { id: string }) => k.id === id)
    expect(listed.spent).toBe(10)
    expect(await balance(userId(pb))).toMatchObject({ balance: 990, held: 0 })
    node.kill()
  })

  it('ends a stream with an error when its node goes away mid-answer, charging nothing', async () => {
    const { node } = await servingNode(server, stories)
    node.script = 'hang'
    const pb = await signUp(server, 'stranded')
    const { key } = await newKey(pb)
    const stream = await client(key).chat.completions.create({
      model: 'stories260K',
      messages: [{ role: 'user', content: 'Tell me' }],
      stream: true,
    })
    const seen: string[] = []
    let caught: unknown = null
    let backup: FakeNode | null = null
    try {
      for await (const chunk of stream) {
        const text = chunk.choices[0]?.delta.content
        if (!text) continue
        seen.push(text)
        if (seen.join('') === 'Once upon' && !backup) {
          // A second node (someone else's: attempts go to different owners) is ready to take
          // over, then the first one dies.
          const backupOwner = await signUp(server, 'backup')
          const linked = await linkNode(server, backupOwner, 'Backup')
          backup = new FakeNode(server, linked.nodeId, linked.credential)
          await backup.connect()
          await serveModel(server, backupOwner, linked.nodeId, stories)
          node.kill()
        }
      }
    } catch (err) {
      caught = err
    }
    expect(seen.join('')).toBe('Once upon')
    expect(caught).toBeInstanceOf(OpenAI.APIError)
    expect((caught as Error).message).toContain(NODE_LOST_MESSAGE)
    const row = await requestOf(userId(pb))
    await waitUntil(
      async () => (await requestRow(row.id as string)).status === 'failed',
      5000,
      'failed',
    )
    expect(await debits(userId(pb))).toEqual([])
    await waitUntil(
      async () => Number((await balance(userId(pb))).held) === 0,
      5000,
      'hold released',
    )
    // The backup node got the job and was told to stop.
    await waitUntil(() => backup!.frames.some((f) => f.type === 'job_cancel'), 5000, 'job_cancel')
    backup!.kill()
  })

  const requestOf = (user: string) =>
    db().selectFrom('requests').selectAll().where('user', '=', user).executeTakeFirstOrThrow()
})

describe.each(dialects)('[%s] OpenAI API rate limits', (dialect) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(dialect, { apiKeyRateLimit: 3, apiUserRateLimit: 5 })
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('limits calls per key and per user with 429 and Retry-After', async () => {
    const pb = await signUp(server, 'busy')
    const make = async (name: string) => {
      const res = await fetch(new URL('/api/keys', server.url), {
        method: 'POST',
        headers: { authorization: pb.authStore.token, 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      })
      return ((await res.json()) as { key: string }).key
    }
    const [a, b] = [await make('a'), await make('b')]
    const list = (key: string) =>
      fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })
    const statuses = async (key: string, n: number) => {
      const out: number[] = []
      for (let i = 0; i < n; i++) out.push((await list(key)).status)
      return out
    }
    expect(await statuses(a, 4)).toEqual([200, 200, 200, 429])
    const limited = await list(a)
    expect(limited.status).toBe(429)
    const retryAfter = Number(limited.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(await limited.json()).toMatchObject({ error: { code: 'rate_limit_exceeded' } })
    // The other key has its own window, but the user's (5 a minute) runs out after two more.
    expect(await statuses(b, 3)).toEqual([200, 200, 429])
    const err = await new OpenAI({ apiKey: b, baseURL: `${server.url}/v1`, maxRetries: 0 }).models
      .list()
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OpenAI.RateLimitError)
  })
})
