/**
 * A send whose answer never reached its client (a 503 after the transaction committed, a
 * connection cut by a coordinator killed or a proxy timing out) is sent again by a client that
 * does not know whether it landed. Without a way to say "this message", the message ran and was
 * charged twice. A client may name its request (`request_id`); the same message sent again under
 * that id answers the stored request. Nobody else can use the id, nor the same user for another
 * message. SQLite and PostgreSQL.
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
      request_id: newRecordId(),
    }
    node.script = 'hang' // still running when it is sent again: the hold is there to compare
    const first = await send(pb, message)
    expect(first.status).toBe(200)
    expect(first.body.request_id).toBe(message.request_id)
    await waitUntil(() => node.jobs.some((j) => j.request_id === message.request_id), 5000, 'job')
    const held = (await balanceOf(server, userId(pb))).held

    const again = await send(pb, message)
    expect(again.status).toBe(200)
    expect(again.body).toMatchObject({ request_id: message.request_id, repeated: true })
    expect(await requestsOf(pb)).toHaveLength(1)
    expect((await balanceOf(server, userId(pb))).held).toBe(held)
    expect(node.jobs.filter((j) => j.request_id === message.request_id)).toHaveLength(1)
    await expectAuditPasses(server)
  })

  it('sent twice at once, it runs once', async () => {
    const pb = await signUp(server, 'racer')
    const message = {
      conversation_id: await conversationOf(pb),
      prompt: 'Tell me a story',
      request_id: newRecordId(),
    }
    const answers = await Promise.all([1, 2, 3, 4].map(() => send(pb, message)))
    for (const a of answers) {
      expect(a.status).toBe(200)
      expect(a.body.request_id).toBe(message.request_id)
    }
    expect(answers.filter((a) => !a.body.repeated)).toHaveLength(1)
    expect((await requestEnded(server, message.request_id)).status).toBe('completed')
    expect(await requestsOf(pb)).toHaveLength(1)
    const debits = (await txsOf(server, userId(pb))).filter(
      (t) => t.type === 'debit_inference_request',
    )
    expect(debits).toHaveLength(1)
    await expectAuditPasses(server)
  })

  it('the id is refused to another user, to another message and to another conversation', async () => {
    const owner = await signUp(server, 'owner')
    const request_id = newRecordId()
    const conversation_id = await conversationOf(owner)
    const sent = await send(owner, { conversation_id, prompt: 'Tell me a story', request_id })
    expect(sent.status).toBe(200)
    await requestEnded(server, request_id)

    const thief = await signUp(server, 'thief')
    const tries = [
      await send(thief, {
        conversation_id: await conversationOf(thief),
        prompt: 'Tell me a story',
        request_id,
      }),
      await send(owner, { conversation_id, prompt: 'Another message', request_id }),
      await send(owner, {
        conversation_id: await conversationOf(owner),
        prompt: 'Tell me a story',
        request_id,
      }),
    ]
    for (const t of tries) {
      expect(t.status).toBe(400)
      expect(t.body.data).toEqual({
        request_id: { code: 'validation_not_unique', message: 'Value must be unique.' },
      })
    }
    expect(await requestsOf(thief)).toHaveLength(0)
    expect(await requestsOf(owner)).toHaveLength(1)
    // The thief learned nothing of the owner's request, and it is unchanged.
    const row = await owner.collection('requests').getOne(request_id)
    expect(row.prompt).toBe('Tell me a story')
    expect(row.status).toBe('completed')
    await expectAuditPasses(server)
  })

  it('an id that is not a record id is a 400 on that field, nothing held', async () => {
    const pb = await signUp(server, 'odd')
    const conversation_id = await conversationOf(pb)
    for (const request_id of ['short', 'UPPERCASEIDXXXX', '../../../etc/p', 42, '']) {
      const res = await send(pb, { conversation_id, prompt: 'Tell me a story', request_id })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.data as object)).toEqual(['request_id'])
    }
    expect(await requestsOf(pb)).toHaveLength(0)
    expect((await balanceOf(server, userId(pb))).held).toBe(0)
  })

  it('without an id, two sends of one message are two requests (as before)', async () => {
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
