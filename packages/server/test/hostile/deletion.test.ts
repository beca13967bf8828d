/**
 * Hostile users against holds: a conversation or an account deleted while its request is queued
 * or running. The request ends in the same step as the deletion (a queued one's hold released at
 * once, a running one's kept until its streamed part is charged from it), the node gets
 * `job_cancel`, the user pays at most for what was streamed (and that part is paid to the node's
 * owner), the queue goes on for everybody else without any new send, no ledger row is
 * ever deleted, and the audit passes afterwards. SQLite and PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { closedAccount } from '../../src/core/ledger/ledger-hooks.ts'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode, streamThenWait } from '../support/hostile-node.ts'
import { DbFaults } from '../support/db-faults.ts'
import { balanceOf, expectAuditPasses, txsOf } from '../support/ledger.ts'
import { postJson, sendChat, waitUntil } from '../support/network.ts'

describe.each(dialects)('[%s] hostile users: deleting what is running', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    stories = await modelId(server)
  })
  afterAll(() => server.stop())

  const uid = (pb: PocketBase) => pb.authStore.record!.id
  const newChat = async (pb: PocketBase) =>
    (await pb.collection('conversations').create({ title: 'New Chat', user: uid(pb) })).id
  const send = (pb: PocketBase, conversation: string, prompt: string) =>
    sendChat(server, pb, { conversation, model: stories, prompt })
  const inference = async (user: string) =>
    (await txsOf(server, user)).filter((t) => String(t.type).endsWith('_inference_request'))

  it('a conversation deleted mid-answer: hold kept until the streamed part is charged from it, node cancelled, only the streamed part paid', async () => {
    const { owner, node } = await hostileNode(server, stories)
    const streamed = 'Once upon a time there was' // 26 characters: 6 tokens by the spec's estimate
    node.behaviour = streamThenWait(streamed)
    try {
      const pb = await signUp(server, 'deleter')
      const conversation = await newChat(pb)
      const prompt = 'Tell me a story'
      let seen: (text: string) => void = () => {}
      const partial = new Promise<string>((r) => (seen = r))
      await pb.collection('requests').subscribe('*', (e) => {
        if (e.record.is_partial && e.record.response) seen(String(e.record.response))
      })
      const id = await send(pb, conversation, prompt)
      const job = await node.firstJob()
      // The user has the streamed text in hand; now the conversation goes.
      expect(await partial).toBe(streamed)
      await pb.collection('requests').unsubscribe()
      expect((await balanceOf(server, uid(pb))).held).toBeGreaterThan(0)
      await pb.collection('conversations').delete(conversation)
      // The request ended in the same step, its hold kept (not spendable) for the charge of the
      // streamed part, which then releases it.
      await waitUntil(() => node.cancelled(job), 10_000, 'job_cancel')
      const cost = Math.floor(prompt.length / 4) + Math.floor(streamed.length / 4)
      const charged = await waitUntil(
        async () => (await inference(uid(pb)))[0],
        10_000,
        'the streamed part charged',
      )
      expect(charged).toMatchObject({ type: 'debit_inference_request', amount: cost, request: id })
      expect(await inference(uid(pb))).toHaveLength(1)
      expect(await inference(uid(owner))).toMatchObject([
        { type: 'credit_inference_request', amount: cost, request: id },
      ])
      expect(await balanceOf(server, uid(pb))).toMatchObject({ balance: 1000 - cost, held: 0 })
      const kept = server.core.database.db.selectFrom('_deletion_holds').select('id')
      expect(await kept.where('id', '=', id).execute()).toEqual([])
      await expectAuditPasses(server)
    } finally {
      node.kill()
    }
  })

  it('a conversation deleted while its send is on the way: the send is refused, nothing held, no request left', async () => {
    const { node } = await hostileNode(server, stories)
    const faults = DbFaults.install(server)
    try {
      const pb = await signUp(server, 'racer')
      const conversation = await newChat(pb)
      // The send has read the conversation (its answer comes back late); the deletion goes
      // through in that window, before the send's transaction.
      faults.delay(/^select conversations$/, 500)
      const sending = postJson(
        server,
        '/api/chat/send',
        { conversation_id: conversation, model_id: stories, prompt: 'Tell me a story' },
        pb.authStore.token,
      )
      await waitUntil(() => faults.delaying.get('select conversations') === 1, 5000, 'the read')
      await pb.collection('conversations').delete(conversation)
      const res = await sending
      expect(res.status).toBe(403)
      expect(res.body).toMatchObject({ message: 'Conversation does not belong to current user' })
      const left = await server.core.database.db
        .selectFrom('requests')
        .select('id')
        .where('user', '=', uid(pb))
        .execute()
      expect(left).toEqual([])
      expect(await balanceOf(server, uid(pb))).toMatchObject({ balance: 1000, held: 0 })
      expect(node.jobs).toHaveLength(0)
      await expectAuditPasses(server)
    } finally {
      faults.clear()
      node.kill()
    }
  })

  it('a queued request deleted with its conversation leaves the queue: the next user is served without any new send', async () => {
    const { node } = await hostileNode(server, stories)
    let release: () => void = () => {}
    const first = new Promise<void>((r) => (release = r))
    // One slot: the first job holds it until the test lets it finish; later jobs answer at once.
    node.behaviour = async (job, n) => {
      n.accept(job)
      if (n.jobs.length === 1) await first
      n.chunk(job, 'Done')
      n.done(job, 1)
    }
    try {
      const [busy, deleter, next] = await Promise.all([
        signUp(server, 'busy'),
        signUp(server, 'qdel'),
        signUp(server, 'next'),
      ])
      const busyId = await send(busy, await newChat(busy), 'First in line')
      await node.firstJob()
      const deletedChat = await newChat(deleter)
      await send(deleter, deletedChat, 'Second in line')
      const nextId = await send(next, await newChat(next), 'Third in line')
      expect(server.network.scheduler.queued).toBe(2)
      expect((await balanceOf(server, uid(deleter))).held).toBeGreaterThan(0)
      await deleter.collection('conversations').delete(deletedChat)
      expect((await balanceOf(server, uid(deleter))).held).toBe(0)
      await waitUntil(
        () => server.network.scheduler.queued === 1,
        10_000,
        'the deleted request out of the queue',
      )
      release()
      for (const [pb, id] of [
        [busy, busyId],
        [next, nextId],
      ] as const) {
        await waitUntil(
          async () => (await pb.collection('requests').getOne(id)).status === 'completed',
          10_000,
          'served',
        )
      }
      expect(node.jobs).toHaveLength(2) // the deleted request never reached the node
      expect(await balanceOf(server, uid(deleter))).toMatchObject({ balance: 1000, held: 0 })
      await expectAuditPasses(server)
    } finally {
      node.kill()
    }
  })

  it('an account deleted mid-answer: job cancelled, ledger rows kept (detached), invariants hold', async () => {
    const { owner, node } = await hostileNode(server, stories)
    node.behaviour = streamThenWait('Once upon a time')
    try {
      // The leaving user has paid for an answer before, so the owner holds earnings from it.
      const pb = await signUp(server, 'leaver')
      const conversation = await newChat(pb)
      node.behaviour = async (job, n) => {
        n.accept(job)
        n.chunk(job, 'Paid answer')
        n.done(job, 2)
      }
      const paid = await send(pb, conversation, 'Hello there')
      await waitUntil(
        async () => (await pb.collection('requests').getOne(paid)).status === 'completed',
        10_000,
        'paid',
      )
      node.behaviour = streamThenWait('Once upon a time')
      await send(pb, conversation, 'Another one')
      const job = await waitUntil(() => node.jobs[1], 10_000, 'the second job')
      const user = uid(pb)
      const before = await txsOf(server, user)
      expect(before.map((t) => t.type)).toEqual(['credit_admin', 'debit_inference_request'])
      await pb.collection('users').delete(user)
      await waitUntil(() => node.cancelled(job), 10_000, 'job_cancel')
      // Nothing under the old id (a new sign-up could not read them), everything under the tombstone.
      expect(await txsOf(server, user)).toEqual([])
      const kept = await txsOf(server, closedAccount(user))
      expect(kept.map((t) => t.type)).toEqual([
        'credit_admin',
        'debit_inference_request',
        'debit_account_closed',
      ])
      expect(
        kept.reduce((s, t) => s + (t.type === 'credit_admin' ? 1 : -1) * Number(t.amount), 0),
      ).toBe(0)
      // The node owner keeps what it earned, and the audit sees debits = credits.
      expect((await inference(uid(owner))).map((t) => t.amount)).toEqual([kept[1].amount])
      await expectAuditPasses(server)
    } finally {
      node.kill()
    }
  })

  it("an account deleted while a deleted conversation's hold awaits its charge: the closing row takes the whole balance, nothing charged later", async () => {
    const { owner, node } = await hostileNode(server, stories)
    node.behaviour = streamThenWait('Once upon a time')
    const faults = DbFaults.install(server)
    try {
      const pb = await signUp(server, 'closer')
      const user = uid(pb)
      const conversation = await newChat(pb)
      const id = await send(pb, conversation, 'Tell me a story')
      const job = await node.firstJob()
      await waitUntil(
        async () => (await pb.collection('requests').getOne(id)).status === 'processing',
        10_000,
        'the answer under way',
      )
      // The charge of the streamed part fails (once): the hold stays kept for it.
      faults.fail(/^delete _deletion_holds$/, 1)
      await pb.collection('conversations').delete(conversation)
      await waitUntil(() => node.cancelled(job), 10_000, 'job_cancel')
      await waitUntil(() => faults.count(/^delete _deletion_holds$/) === 1, 10_000, 'the charge')
      expect((await balanceOf(server, user)).held).toBeGreaterThan(0)
      await pb.collection('users').delete(user)
      // A deleted account is not charged: its kept hold is released, the closing row takes all.
      const kept = await txsOf(server, closedAccount(user))
      expect(kept).toMatchObject([
        { type: 'credit_admin', amount: 1000 },
        { type: 'debit_account_closed', amount: 1000 },
      ])
      const db = server.core.database.db
      expect(
        await db.selectFrom('_deletion_holds').select('id').where('user', '=', user).execute(),
      ).toEqual([])
      expect(await inference(uid(owner))).toEqual([])
      await expectAuditPasses(server)
    } finally {
      faults.clear()
      node.kill()
    }
  })
})
