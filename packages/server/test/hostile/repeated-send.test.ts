/**
 * A send whose answer never reached its client (a 503 after the transaction committed, a
 * connection cut by a coordinator killed or a proxy timing out) is sent again by a client that
 * does not know whether it landed. Without a way to say "this message", the message ran and was
 * charged twice. A client may give the message an idempotency key; the same message sent again
 * under it answers the stored request. Keys are each user's own; another message under a key in
 * use is refused; the request's id is always the server's (a client naming ids reused a deleted
 * request's, whose ledger rows then made the new request's streamed part free). SQLite and
 * PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { newRecordId } from '../../src/tools/ids.ts'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { balanceOf, expectAuditPasses, txsOf } from '../support/ledger.ts'
import {
  postJson,
  requestEnded,
  requestRowOf,
  servingNode,
  waitUntil,
  type FakeNode,
} from '../support/network.ts'

describe.each(dialects)('[%s] the same message sent again after a lost answer', (dialect) => {
  let server: TestServer
  let stories: string
  let node: FakeNode
  beforeAll(async () => {
    server = await startTestServer(dialect)
    stories = await modelId(server)
    node = (await servingNode(server, stories)).node
  })
  afterEach(() => {
    node.script = 'stream'
  })
  afterAll(async () => {
    node?.kill()
    await server?.stop()
  })

  const userId = (pb: PocketBase) => pb.authStore.record!.id
  const conversationOf = async (pb: PocketBase) =>
    (await pb.collection('conversations').create({ title: 'New Chat', user: userId(pb) })).id
  const send = (pb: PocketBase, body: Record<string, unknown>) =>
    postJson(server, '/api/chat/send', { model_id: stories, ...body }, pb.authStore.token)
  const requestsOf = (pb: PocketBase) =>
    server.core.database.db
      .selectFrom('requests')
      .select('id')
      .where('user', '=', userId(pb))
      .execute()

  it('answers the stored request: one request, one hold, one charge', async () => {
    const pb = await signUp(server, 'twice')
    const message = {
      conversation_id: await conversationOf(pb),
      prompt: 'Tell me a story',
      idempotency_key: newRecordId(),
    }
    node.script = 'hang' // still running when it is sent again: the hold is there to compare
    const first = await send(pb, message)
    expect(first.status).toBe(200)
    const id = String(first.body.request_id)
    expect(id).not.toBe(message.idempotency_key)
    await waitUntil(() => node.jobs.some((j) => j.request_id === id), 5000, 'job')
    const held = (await balanceOf(server, userId(pb))).held

    const again = await send(pb, message)
    expect(again.status).toBe(200)
    expect(again.body).toMatchObject({ request_id: id, repeated: true })
    expect(await requestsOf(pb)).toHaveLength(1)
    expect((await balanceOf(server, userId(pb))).held).toBe(held)
    expect(node.jobs.filter((j) => j.request_id === id)).toHaveLength(1)
    await expectAuditPasses(server)
    // Stopped, so its job frees the node's slot for the tests after it (else only its stall does).
    const stopped = await postJson(
      server,
      '/api/requests/cancel',
      { request_id: id },
      pb.authStore.token,
    )
    expect(stopped.status).toBe(200)
    await waitUntil(
      async () => (await requestRowOf(server, id)).status === 'cancelled',
      5000,
      'the request cancelled',
    )
  })

  it('sent twice at once, it runs once', async () => {
    const pb = await signUp(server, 'racer')
    const message = {
      conversation_id: await conversationOf(pb),
      prompt: 'Tell me a story',
      idempotency_key: newRecordId(),
    }
    const answers = await Promise.all([1, 2, 3, 4].map(() => send(pb, message)))
    const id = String(answers[0].body.request_id)
    for (const a of answers) {
      expect(a.status).toBe(200)
      expect(a.body.request_id).toBe(id)
    }
    expect(answers.filter((a) => !a.body.repeated)).toHaveLength(1)
    expect((await requestEnded(server, id)).status).toBe('completed')
    expect(await requestsOf(pb)).toHaveLength(1)
    const debits = (await txsOf(server, userId(pb))).filter(
      (t) => t.type === 'debit_inference_request',
    )
    expect(debits).toHaveLength(1)
    await expectAuditPasses(server)
  })

  it("a key is its user's own: another user's message under it is theirs, another message of the same user is refused", async () => {
    const owner = await signUp(server, 'owner')
    const idempotency_key = newRecordId()
    const conversation_id = await conversationOf(owner)
    const sent = await send(owner, { conversation_id, prompt: 'Tell me a story', idempotency_key })
    expect(sent.status).toBe(200)
    const id = String(sent.body.request_id)
    await requestEnded(server, id)

    // Another user under the same key: a message of their own, run and charged to them.
    const other = await signUp(server, 'other')
    const theirs = await send(other, {
      conversation_id: await conversationOf(other),
      prompt: 'Tell me a story',
      idempotency_key,
    })
    expect(theirs.status).toBe(200)
    expect(theirs.body.request_id).not.toBe(id)
    expect(theirs.body.repeated).toBeUndefined()
    await requestEnded(server, String(theirs.body.request_id))

    // The owner under the key in use, for another message or another conversation: refused.
    const tries = [
      await send(owner, { conversation_id, prompt: 'Another message', idempotency_key }),
      await send(owner, {
        conversation_id: await conversationOf(owner),
        prompt: 'Tell me a story',
        idempotency_key,
      }),
    ]
    for (const t of tries) {
      expect(t.status).toBe(400)
      expect(t.body.data).toEqual({
        idempotency_key: { code: 'validation_not_unique', message: 'Value must be unique.' },
      })
    }
    expect(await requestsOf(owner)).toHaveLength(1)
    expect(await requestsOf(other)).toHaveLength(1)
    const row = await owner.collection('requests').getOne(id)
    expect(row).toMatchObject({ prompt: 'Tell me a story', status: 'completed' })
    // The key is not part of the record anybody reads.
    expect(row.idempotency_key).toBeUndefined()
    await expectAuditPasses(server)
  })

  it('a key used again after its conversation was deleted makes a new request, whose streamed part is charged', async () => {
    const pb = await signUp(server, 'deleter')
    const idempotency_key = newRecordId()
    const first = await conversationOf(pb)
    const done = await send(pb, {
      conversation_id: first,
      prompt: 'Tell me a story',
      idempotency_key,
    })
    const firstId = String(done.body.request_id)
    expect((await requestEnded(server, firstId)).status).toBe('completed')
    await pb.collection('conversations').delete(first)

    // The same key in a new conversation, deleted while its answer streams.
    node.script = 'hang' // streams two chunks, then waits
    const second = await conversationOf(pb)
    // A body naming the deleted request's id (as this API once allowed) names nothing.
    const again = await send(pb, {
      conversation_id: second,
      prompt: 'Tell me a story',
      idempotency_key,
      request_id: firstId,
    })
    expect(again.status).toBe(200)
    const secondId = String(again.body.request_id)
    expect(secondId).not.toBe(firstId)
    await waitUntil(() => node.jobs.some((j) => j.request_id === secondId), 5000, 'job')
    await new Promise((r) => setTimeout(r, 300)) // its two chunks streamed
    await pb.collection('conversations').delete(second)
    // Each request charged once: the second's streamed part too.
    const debits = async () =>
      (await txsOf(server, userId(pb))).filter((t) => t.type === 'debit_inference_request')
    await waitUntil(async () => (await debits()).length === 2, 10_000, 'the streamed part charged')
    expect(new Set((await debits()).map((t) => t.request))).toEqual(new Set([firstId, secondId]))
    await expectAuditPasses(server)
  })

  it('a key that is not 1-64 letters, digits, - or _ is a 400 on that field, nothing held', async () => {
    const pb = await signUp(server, 'odd')
    const conversation_id = await conversationOf(pb)
    for (const idempotency_key of ['', 'a'.repeat(65), '../../../etc/p', 'with space', 42]) {
      const res = await send(pb, { conversation_id, prompt: 'Tell me a story', idempotency_key })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.data as object)).toEqual(['idempotency_key'])
    }
    expect(await requestsOf(pb)).toHaveLength(0)
    expect((await balanceOf(server, userId(pb))).held).toBe(0)
  })

  it('without a key, two sends of one message are two requests (as before)', async () => {
    const pb = await signUp(server, 'plain')
    const message = { conversation_id: await conversationOf(pb), prompt: 'Tell me a story' }
    const a = await send(pb, message)
    const b = await send(pb, message)
    expect(a.body.request_id).not.toBe(b.body.request_id)
    await requestEnded(server, String(a.body.request_id))
    await requestEnded(server, String(b.body.request_id))
    expect(await requestsOf(pb)).toHaveLength(2)
  })
})
