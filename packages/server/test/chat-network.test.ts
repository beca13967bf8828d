import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { postJson, servingNode, waitUntil, type FakeNode } from './support/network.ts'
import { withSingleWrite } from '../src/core/records/unit-of-work.ts'
import { adjustBalance, balanceOf, txsOf } from './support/ledger.ts'

const unavailable = (name: string) =>
  `${name} is currently unavailable. No nodes are online for this model. Please select a different model or try again later.`

describe.each(dialects)('[%s] chat send, scheduler and credits', (dialect) => {
  let server: TestServer
  let stories: string
  let tiny: string

  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      {},
      {
        network: {
          scheduler: { stallMs: 1000, offerTimeoutMs: 1000, reconnectWaitMs: 1500 },
          maxOutputTokens: 100,
        },
      },
    )
    stories = await modelId(server)
    tiny = await modelId(server, 'llama-2-tiny-random')
  })
  afterAll(async () => {
    await server?.stop()
  })

  const userId = (pb: PocketBase) => pb.authStore.record!.id
  const send = (pb: PocketBase, body: Record<string, unknown>) =>
    postJson(server, '/api/chat/send', body, pb.authStore.token)
  const request = (id: string) =>
    server.core.database.db
      .selectFrom('requests')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  const balance = (user: string) => balanceOf(server, user)
  const txs = (user: string) => txsOf(server, user)
  const conversation = async (pb: PocketBase) =>
    (await pb.collection('conversations').create({ title: 'New Chat', user: userId(pb) })).id

  /** A provider with one linked, connected node serving `model`. */
  const provider = (model: string, maxJobs = 1) => servingNode(server, model, server, maxJobs)

  it('validates a send with the spec messages', async () => {
    const pb = await signUp(server, 'validator')
    const other = await signUp(server, 'other')
    const conv = await conversation(pb)
    expect((await send(pb, { model_id: stories, prompt: 'hi' })).body.message).toBe(
      'Conversation ID is required',
    )
    expect((await send(pb, { conversation_id: conv, prompt: 'hi' })).body.message).toBe(
      'Model ID is required',
    )
    const foreign = await send(other, { conversation_id: conv, model_id: stories, prompt: 'hi' })
    expect(foreign.body.message).toBe('Conversation does not belong to current user')
    const offline = await send(pb, { conversation_id: conv, model_id: tiny, prompt: 'hi' })
    expect(offline).toMatchObject({
      status: 400,
      body: { message: unavailable('Llama 2 Tiny (random)') },
    })
    expect(
      (
        await postJson(server, '/api/chat/send', {
          conversation_id: conv,
          model_id: stories,
          prompt: 'x',
        })
      ).status,
    ).toBe(401)
  })

  it('streams partial updates without database writes, then settles the exact amounts once', async () => {
    const { owner, node } = await provider(stories)
    node.chunkDelayMs = 80
    const pb = await signUp(server, 'chatter')
    const conv = await conversation(pb)
    const prompt = 'Tell me a story about a cat'
    const partials: string[] = []
    let duringStream: Promise<Record<string, unknown>> | null = null
    let done: ((r: Record<string, unknown>) => void) | null = null
    const completed = new Promise<Record<string, unknown>>((r) => (done = r))
    const answer = await send(pb, {
      conversation_id: conv,
      model_id: stories,
      prompt,
      temperature: 0.5,
    })
    expect(answer.body).toMatchObject({ status: 'queued', position: 0 })
    const id = answer.body.request_id as string
    await pb.collection('requests').subscribe(id, (e) => {
      if (e.record.is_partial && e.record.response) {
        partials.push(e.record.response as string)
        duringStream ??= request(id)
      }
      if (e.record.status === 'completed') done!(e.record)
    })
    const final = await completed
    expect(partials.length).toBeGreaterThan(1)
    expect(partials.at(-1)!.length).toBeGreaterThan(partials[0].length)
    // The growing text travelled through realtime only; the row was written at the end.
    expect((await duringStream!).response).toBe('')
    const tokensInput = Math.floor(prompt.length / 4)
    expect(final).toMatchObject({
      status: 'completed',
      response: 'Once upon a time',
      is_partial: false,
      tokens_input: tokensInput,
      tokens_output: 4,
      processing_time_ms: 42,
      node: node.nodeId,
    })
    const job = node.jobs[0]
    expect(job.sampling).toMatchObject({
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      context_length: 8000,
    })
    expect(job.prompt.messages).toEqual([{ role: 'user', content: prompt }])

    const cost = (tokensInput + 4) * 1
    await waitUntil(
      async () => (await txs(userId(owner))).some((t) => t.type === 'credit_inference_request'),
      5000,
      'credit',
    )
    const debit = (await txs(userId(pb))).filter((t) => t.type === 'debit_inference_request')
    expect(debit).toMatchObject([
      { amount: cost, request: id, description: 'Spent on inference request' },
    ])
    const credit = (await txs(userId(owner))).filter((t) => t.type === 'credit_inference_request')
    expect(credit).toMatchObject([
      { amount: cost, request: id, description: 'Earned from processing inference request' },
    ])
    expect(await balance(userId(pb))).toMatchObject({
      balance: 1000 - cost,
      held: 0,
      total_spent: cost,
    })
    expect(await balance(userId(owner))).toMatchObject({ balance: 1000 + cost, total_earned: cost })
    const conversationRow = await pb.collection('conversations').getOne(conv)
    expect(conversationRow.message_count).toBe(1)
    const nodeRow = await owner.collection('nodes').getOne(node.nodeId)
    expect(nodeRow.total_requests).toBe(1)
    expect(nodeRow.reputation_score).toBeCloseTo(5.1)
    const jobs = await server.core.database.db
      .selectFrom('node_jobs')
      .select('status')
      .where('request', '=', id)
      .execute()
    expect(jobs.map((j) => j.status)).toEqual(['completed'])

    // A duplicate done frame settles nothing twice.
    node.send({
      type: 'job_done',
      job_id: job.job_id,
      tokens_input: 1,
      tokens_output: 1,
      processing_time_ms: 1,
    })
    await new Promise((r) => setTimeout(r, 100))
    expect(
      (await txs(userId(pb))).filter((t) => t.type === 'debit_inference_request'),
    ).toHaveLength(1)

    // The next turn carries the history.
    const second = await send(pb, { conversation_id: conv, model_id: stories, prompt: 'More' })
    await waitUntil(
      async () => (await request(second.body.request_id as string)).status === 'completed',
      5000,
      'second',
    )
    expect(node.jobs[1].prompt.messages.map((m) => m.content)).toEqual([
      prompt,
      'Once upon a time',
      'More',
    ])
    await pb.collection('requests').unsubscribe()
    node.kill()
  })

  it('coalesces a fast stream to at most one partial event per 50 ms', async () => {
    const { node } = await provider(stories)
    node.chunks = Array.from({ length: 60 }, (_, i) => `t${i} `)
    node.chunkDelayMs = 5
    const pb = await signUp(server, 'fast')
    const conv = await conversation(pb)
    const times: number[] = []
    let finish: () => void = () => {}
    const completed = new Promise<void>((r) => (finish = r))
    await pb.collection('requests').subscribe('*', (e) => {
      if (e.record.is_partial && e.record.response) times.push(Date.now())
      if (e.record.status === 'completed' && e.record.response) finish()
    })
    const started = Date.now()
    await send(pb, { conversation_id: conv, model_id: stories, prompt: 'Go fast' })
    await completed
    const elapsed = Date.now() - started
    expect(times.length).toBeGreaterThan(1)
    // 60 chunks, yet no more events than 50 ms windows (+ the first and the final whole text).
    expect(times.length).toBeLessThanOrEqual(Math.ceil(elapsed / 50) + 2)
    expect(times.length).toBeLessThan(60)
    await pb.collection('requests').unsubscribe()
    node.kill()
  })

  it('offers again, after a pause, to a node that said it was full', async () => {
    const { node } = await provider(tiny)
    node.rejectNext = 2
    const pb = await signUp(server, 'patient')
    const conv = await conversation(pb)
    const sent = await send(pb, { conversation_id: conv, model_id: tiny, prompt: 'Hello' })
    const done = await waitUntil(
      async () => {
        const r = await request(sent.body.request_id as string)
        return r.status !== 'pending' && r.status !== 'processing' && r
      },
      5000,
      'settled',
    )
    expect(done.status).toBe('completed')
    expect(node.jobs).toHaveLength(3)
    node.kill()
  })

  it('follows nodes going on and off in available_models.node_count', async () => {
    const pb = await signUp(server, 'watcher')
    const count = async () => (await pb.collection('available_models').getOne(tiny)).node_count
    const before = await count()
    const a = await provider(tiny)
    const b = await provider(tiny)
    expect(await count()).toBe(before + 2)
    a.node.kill()
    await waitUntil(async () => (await count()) === before + 1, 5000, 'count drop')
    b.node.kill()
    await waitUntil(async () => (await count()) === before, 5000, 'count zero')
  })

  it('gives a job whose node dies mid-stream to another node: one answer, one charge', async () => {
    const first = await provider(tiny)
    first.node.script = 'hang'
    const pb = await signUp(server, 'survivor')
    const conv = await conversation(pb)
    const answer = await send(pb, { conversation_id: conv, model_id: tiny, prompt: 'Hello there' })
    const id = answer.body.request_id as string
    await waitUntil(() => first.node.jobs.length === 1, 5000, 'first job')
    const second = await provider(tiny)
    second.node.chunks = ['Second', ' answer']
    await waitUntil(async () => (await request(id)).response === '' && first.node.jobs.length, 5000)
    first.node.kill()
    const row = await waitUntil(
      async () => {
        const r = await request(id)
        return r.status === 'completed' && r
      },
      5000,
      'completed elsewhere',
    )
    expect(row.response).toBe('Second answer')
    expect(row.node).toBe(second.node.nodeId)
    const charges = (await txs(userId(pb))).filter((t) => t.type === 'debit_inference_request')
    expect(charges).toHaveLength(1)
    expect(charges[0].amount).toBe((Math.floor('Hello there'.length / 4) + 2) * 2)
    second.node.kill()
  })

  it('fails with can_retry and no charge when no node is left, and retries for its owner', async () => {
    const lone = await provider(stories)
    lone.node.script = 'hang'
    const pb = await signUp(server, 'unlucky')
    const conv = await conversation(pb)
    const answer = await send(pb, { conversation_id: conv, model_id: stories, prompt: 'Anyone?' })
    const id = answer.body.request_id as string
    await waitUntil(() => lone.node.jobs.length === 1, 5000, 'job')
    expect(Number((await balance(userId(pb))).held)).toBeGreaterThan(0)
    const failed = await waitUntil(
      async () => {
        const r = await request(id)
        return r.status === 'failed' && r
      },
      5000,
      'failed',
    )
    expect(failed).toMatchObject({ can_retry: 1, is_partial: 0 })
    expect(String(failed.error_message)).toMatch(/No node is available/)
    expect(await balance(userId(pb))).toMatchObject({ balance: 1000, held: 0 })
    expect(await txs(userId(pb))).toHaveLength(1) // the initial credits only

    const stranger = await signUp(server, 'stranger')
    expect(
      (await postJson(server, '/api/requests/retry', { request_id: id }, stranger.authStore.token))
        .status,
    ).toBe(404)
    lone.node.script = 'stream'
    const retry = await postJson(
      server,
      '/api/requests/retry',
      { request_id: id },
      pb.authStore.token,
    )
    expect(retry.body).toMatchObject({ status: 'success' })
    const done = await waitUntil(
      async () => {
        const r = await request(id)
        return r.status === 'completed' && r
      },
      5000,
      'retried',
    )
    expect(done.response).toBe('Once upon a time')
    expect(
      (await txs(userId(pb))).filter((t) => t.type === 'debit_inference_request'),
    ).toHaveLength(1)
    lone.node.kill()
  })

  /**
   * The node's socket goes, and the database still counts it online: what a coordinator process
   * that drained or died leaves behind while its agents reconnect to another one.
   */
  const betweenConnections = async (node: FakeNode) => {
    node.kill()
    const row = () =>
      server.core.database.db
        .selectFrom('nodes')
        .select('status')
        .where('id', '=', node.nodeId)
        .executeTakeFirstOrThrow()
    await waitUntil(async () => (await row()).status === 'offline', 5000, 'offline')
    await withSingleWrite(server.core, (uow) =>
      uow.update('nodes', (q) => q.set({ status: 'online' }).where('id', '=', node.nodeId)),
    )
  }

  it('holds a request for a node that is between connections, and runs it once the node is back', async () => {
    const { node } = await provider(tiny)
    const pb = await signUp(server, 'patient')
    await betweenConnections(node)
    const answer = await send(pb, {
      conversation_id: await conversation(pb),
      model_id: tiny,
      prompt: 'Still there?',
    })
    expect(answer.status).toBe(200)
    const id = answer.body.request_id as string
    await new Promise((r) => setTimeout(r, 300))
    expect((await request(id)).status).toBe('pending')
    expect(await node.connect()).toBe('open')
    const row = await waitUntil(
      async () => {
        const r = await request(id)
        return r.status === 'completed' && r
      },
      5000,
      'answered after the reconnect',
    )
    expect(row.node).toBe(node.nodeId)
    node.kill()
  })

  it('fails a held request retryable, its hold released, when no node is back within the wait', async () => {
    const { node } = await provider(tiny)
    const pb = await signUp(server, 'forsaken')
    await betweenConnections(node)
    const started = Date.now()
    const answer = await send(pb, {
      conversation_id: await conversation(pb),
      model_id: tiny,
      prompt: 'Hello?',
    })
    const id = answer.body.request_id as string
    const failed = await waitUntil(
      async () => {
        const r = await request(id)
        return r.status === 'failed' && r
      },
      5000,
      'failed after the wait',
    )
    // It waited (1.5 s in this server), then failed as it always did when no node could run it.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400)
    expect(failed).toMatchObject({ can_retry: 1 })
    expect(String(failed.error_message)).toMatch(/No node is available/)
    expect(await balance(userId(pb))).toMatchObject({ held: 0 })
  })

  it('never overspends: 20 concurrent sends against a balance that covers 5', async () => {
    const { node } = await provider(stories, 4)
    // Slow enough that no request settles (and returns part of its hold) during the burst.
    node.chunkDelayMs = 300
    const pb = await signUp(server, 'spender')
    const conv = await conversation(pb)
    const prompt = 'abcdefgh' // 2 estimated input tokens; hold = (2 + 100) x 1
    const hold = 102
    await adjustBalance(server, userId(pb), -(1000 - 5 * hold))
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        send(pb, { conversation_id: conv, model_id: stories, prompt }),
      ),
    )
    const accepted = answers.filter((a) => a.status === 200)
    expect(accepted).toHaveLength(5)
    // Four slots: the fifth request waits in the queue while the others run.
    await waitUntil(
      async () => {
        const rows = await server.core.database.db
          .selectFrom('requests')
          .select('status')
          .where('user', '=', userId(pb))
          .execute()
        const count = (s: string) => rows.filter((r) => r.status === s).length
        return count('processing') === 4 && count('pending') === 1
      },
      5000,
      'four running, one queued',
    )
    for (const refused of answers.filter((a) => a.status !== 200))
      expect(refused.body.message).toMatch(/Insufficient credits/)
    await waitUntil(
      async () => {
        const rows = await server.core.database.db
          .selectFrom('requests')
          .select('status')
          .where('user', '=', userId(pb))
          .execute()
        return rows.every((r) => r.status === 'completed')
      },
      10_000,
      'all completed',
    )
    const b = await balance(userId(pb))
    const ledger = await txs(userId(pb))
    const sum = ledger.reduce(
      (s, t) => s + (String(t.type).startsWith('credit') ? 1 : -1) * Number(t.amount),
      0,
    )
    expect(Number(b.balance)).toBeGreaterThanOrEqual(0)
    expect(Number(b.held)).toBe(0)
    expect(sum).toBe(Number(b.balance))
    expect(ledger.filter((t) => t.type === 'debit_inference_request')).toHaveLength(5)
    node.kill()
  })
})
