/**
 * Stop generating (issue 10): `POST /api/requests/cancel {request_id}`. The owner's running request
 * ends `cancelled` with the text streamed so far, its node gets `job_cancel` at once, the user pays
 * for what was produced (input + output so far, x multiplier, the usual ledger rows), the hold is
 * released; a queued request ends cancelled with nothing charged and never reaches a node; a
 * second cancel, or a cancel of a finished request, changes nothing; anyone else gets a 404.
 * SQLite and PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { hostileNode, streamThenWait } from './support/hostile-node.ts'
import { balanceOf, expectAuditPasses, txsOf } from './support/ledger.ts'
import { postJson, sendChat, waitUntil } from './support/network.ts'

describe.each(dialects)('[%s] stop generating: POST /api/requests/cancel', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    // No stall or deadline may end a job the node keeps open: only the cancel does.
    server = await startTestServer(dialect, {}, { network: { scheduler: { stallMs: 120_000 } } })
    stories = await modelId(server)
  })
  afterAll(() => server.stop())

  const uid = (pb: PocketBase) => pb.authStore.record!.id
  const newChat = async (pb: PocketBase) =>
    (await pb.collection('conversations').create({ title: 'New Chat', user: uid(pb) })).id
  const send = (pb: PocketBase, conversation: string, prompt: string) =>
    sendChat(server, pb, { conversation, model: stories, prompt })
  const cancel = (pb: PocketBase | null, body: unknown) =>
    postJson(server, '/api/requests/cancel', body, pb?.authStore.token)
  const inference = async (user: string) =>
    (await txsOf(server, user)).filter((t) => String(t.type).endsWith('_inference_request'))
  const jobStatuses = async (requestId: string) =>
    (
      await server.core.database.db
        .selectFrom('node_jobs')
        .select('status')
        .where('request', '=', requestId)
        .execute()
    ).map((j) => j.status)

  it('stops a running answer: text kept, node told at once, what was produced paid, hold released', async () => {
    const { owner, node } = await hostileNode(server, stories)
    const streamed = 'Once upon a time there was' // 26 characters: 6 tokens by the spec's estimate
    node.behaviour = streamThenWait(streamed)
    try {
      const pb = await signUp(server, 'stopper')
      const stranger = await signUp(server, 'stranger')
      const conversation = await newChat(pb)
      const prompt = 'Tell me a story'
      let seen: (text: string) => void = () => {}
      const partial = new Promise<string>((r) => (seen = r))
      await pb.collection('requests').subscribe('*', (e) => {
        if (e.record.is_partial && e.record.response) seen(String(e.record.response))
      })
      const id = await send(pb, conversation, prompt)
      const job = await node.firstJob()
      expect(await partial).toBe(streamed)
      await pb.collection('requests').unsubscribe()
      expect((await balanceOf(server, uid(pb))).held).toBeGreaterThan(0)

      // Not the owner: PocketBase's 404, and nothing stops.
      const foreign = await cancel(stranger, { request_id: id })
      expect(foreign).toEqual({
        status: 404,
        body: { status: 404, message: "The requested resource wasn't found.", data: {} },
      })
      expect((await cancel(null, { request_id: id })).status).toBe(401)
      expect(await cancel(pb, {})).toMatchObject({
        status: 400,
        body: { message: 'Request ID is required' },
      })
      expect(node.cancelled(job)).toBe(false)

      const cost = Math.floor(prompt.length / 4) + Math.floor(streamed.length / 4)
      const stopped = await cancel(pb, { request_id: id })
      expect(stopped).toEqual({
        status: 200,
        body: {
          request_id: id,
          status: 'cancelled',
          response: streamed,
          tokens_input: Math.floor(prompt.length / 4),
          tokens_output: Math.floor(streamed.length / 4),
          cost,
        },
      })
      // The frame went out before the answer did.
      expect(node.cancelled(job)).toBe(true)
      const row = await pb.collection('requests').getOne(id)
      expect(row).toMatchObject({
        status: 'cancelled',
        response: streamed,
        is_partial: false,
        node: node.nodeId,
        cost,
        can_retry: false,
      })
      expect(await inference(uid(pb))).toMatchObject([
        { type: 'debit_inference_request', amount: cost, request: id },
      ])
      expect(await inference(uid(owner))).toMatchObject([
        { type: 'credit_inference_request', amount: cost, request: id },
      ])
      expect(await balanceOf(server, uid(pb))).toMatchObject({ balance: 1000 - cost, held: 0 })
      expect(await jobStatuses(id)).toEqual(['cancelled'])
      expect((await pb.collection('conversations').getOne(conversation)).message_count).toBe(1)

      // Idempotent: a second cancel answers the same and charges nothing more; a late frame of
      // the stopped job changes nothing either.
      expect(await cancel(pb, { request_id: id })).toEqual(stopped)
      node.chunk(job, ' a cat')
      node.done(job, 50)
      await new Promise((r) => setTimeout(r, 200))
      expect(await pb.collection('requests').getOne(id)).toMatchObject({
        status: 'cancelled',
        response: streamed,
      })
      expect(await inference(uid(pb))).toHaveLength(1)
      await expectAuditPasses(server)

      // The stopped answer is part of the conversation: the next message's prompt carries it.
      node.behaviour = null
      const next = await send(pb, conversation, 'And then?')
      await waitUntil(() => node.jobs[1], 10_000, 'the next job')
      expect(node.jobs[1].prompt.messages).toEqual([
        { role: 'user', content: prompt },
        { role: 'assistant', content: streamed },
        { role: 'user', content: 'And then?' },
      ])
      await waitUntil(
        async () => (await pb.collection('requests').getOne(next)).status === 'completed',
        10_000,
        'the next answer',
      )
    } finally {
      node.kill()
    }
  })

  it('cancels a queued request: never offered, nothing charged, its hold released', async () => {
    const { node } = await hostileNode(server, stories)
    node.behaviour = streamThenWait('Busy')
    try {
      const pb = await signUp(server, 'queuer')
      const conversation = await newChat(pb)
      // The first request takes the node's only slot; the second waits in the queue.
      const first = await send(pb, conversation, 'First question')
      await node.firstJob()
      const second = await send(pb, conversation, 'Second question')
      const heldBoth = Number((await balanceOf(server, uid(pb))).held)
      expect((await pb.collection('requests').getOne(second)).status).toBe('pending')

      const stopped = await cancel(pb, { request_id: second })
      expect(stopped.body).toMatchObject({ status: 'cancelled', response: '', cost: 0 })
      const heldFirst = Number((await balanceOf(server, uid(pb))).held)
      expect(heldFirst).toBeGreaterThan(0)
      expect(heldFirst).toBeLessThan(heldBoth)
      expect(await pb.collection('requests').getOne(second)).toMatchObject({
        status: 'cancelled',
        tokens_input: 0,
        tokens_output: 0,
        cost: 0,
      })
      expect(await jobStatuses(second)).toEqual([])

      // The running one stops too; its slot frees, and the cancelled one is still never offered.
      await cancel(pb, { request_id: first })
      await new Promise((r) => setTimeout(r, 300))
      expect(node.jobs).toHaveLength(1)
      // Only the first request's streamed part ('Busy': 1 token by the estimate) is paid.
      const firstCost = Math.floor('First question'.length / 4) + 1
      expect(await balanceOf(server, uid(pb))).toMatchObject({ balance: 1000 - firstCost, held: 0 })
      expect(await inference(uid(pb))).toMatchObject([{ amount: firstCost, request: first }])
      await expectAuditPasses(server)
    } finally {
      node.kill()
    }
  })

  it('leaves a finished request as it ended', async () => {
    const { node } = await hostileNode(server, stories)
    try {
      const pb = await signUp(server, 'finisher')
      const conversation = await newChat(pb)
      const id = await send(pb, conversation, 'Tell me a story')
      await waitUntil(
        async () => (await pb.collection('requests').getOne(id)).status === 'completed',
        10_000,
        'completed',
      )
      const before = await pb.collection('requests').getOne(id)
      const ledger = await inference(uid(pb))
      const res = await cancel(pb, { request_id: id })
      expect(res.body).toMatchObject({
        status: 'completed',
        response: 'Once upon a time',
        cost: before.cost,
      })
      expect(await pb.collection('requests').getOne(id)).toEqual(before)
      expect(await inference(uid(pb))).toEqual(ledger)
      expect(node.frames.some((f) => f.type === 'job_cancel')).toBe(false)
    } finally {
      node.kill()
    }
  })
})
