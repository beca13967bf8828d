/**
 * Probation and pending earnings through the whole network (issue 13, point 4): a new node's
 * earnings are held as pending (the users who ask pay as usual); passed canaries make it verified
 * and pay its owner what was held; a node caught by a failed canary loses its pending earnings,
 * which go back to the users who paid for those answers as reversal rows on the same requests,
 * and its reputation falls sharply; a node deleted before it was verified returns them too; a
 * payer who left in the meantime forfeits its share. Canaries go through the real scheduler, node
 * frames and verdict; the reference here is a fake that agrees or disagrees with every token
 * (scoring with real llama.cpp is canaries.test.ts). The audit passes after every step. SQLite
 * and PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { serverToNodeFrameSchema, type ScoredPosition } from '@meshwork/protocol'
import { setTrusted } from '../../src/cli/node-trust.ts'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode, type HostileNode } from '../support/hostile-node.ts'
import { balanceOf, expectAuditPasses, txsOf } from '../support/ledger.ts'
import { FakeNode, linkNode, postJson, serveModel, waitUntil } from '../support/network.ts'

/** Positions per canary the fake reference reports: enough clear ones to judge (100). */
const SCORED = 120

describe.each(dialects)('[%s] probation and pending earnings', (dialect) => {
  let server: TestServer
  let stories: string
  let reference: FakeNode
  /** Whether the fake reference agrees with the judged node's tokens. */
  let agree = true
  const nodes: FakeNode[] = []

  beforeAll(async () => {
    server = await startTestServer(dialect, {}, { network: { canaries: { tickMs: 0 } } })
    stories = await modelId(server)
    const operator = await signUp(server, 'operator')
    const { nodeId, credential } = await linkNode(server, operator, 'Reference')
    reference = new FakeNode(server, nodeId, credential)
    await reference.connect()
    reference.ws.on('message', (data) => {
      const frame = serverToNodeFrameSchema.parse(JSON.parse(String(data)))
      if (frame.type !== 'score_request') return
      const tokens = Array.from({ length: SCORED }, (_, i) => 100 + i)
      const positions: ScoredPosition[] = tokens.map((t) => ({
        top: agree ? t : t + 1,
        lead: 5,
        logprob: agree ? -0.2 : -6,
        top_logprob: -0.2,
      }))
      reference.send({
        type: 'score_result',
        score_id: frame.score_id,
        tokens,
        positions,
        ids_match: null,
      })
    })
    await serveModel(server, operator, nodeId, stories)
    await operator.collection('nodes').update(nodeId, { is_active: false })
    await setTrusted(server.core.database.db, nodeId, true)
  })
  // Each test's node leaves with it: the next test's new node is the only one to serve.
  afterEach(async () => {
    const ids = nodes.map((n) => n.nodeId)
    for (const n of nodes.splice(0)) n.kill()
    await waitUntil(() => ids.every((id) => !server.network.registry.get(id)), 5000, 'nodes gone')
  })
  afterAll(async () => {
    reference?.kill()
    await server?.stop()
  })

  const uid = (pb: PocketBase) => pb.authStore.record!.id
  const db = () => server.core.database.db

  async function newNode() {
    const s = await hostileNode(server, stories, undefined, { probation: true })
    nodes.push(s.node)
    return s
  }

  /** A paid chat answered by `node`; its cost in credits. */
  async function paidAnswer(pb: PocketBase, node: HostileNode) {
    const conversation = await pb
      .collection('conversations')
      .create({ title: 'New Chat', user: uid(pb) })
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conversation.id, model_id: stories, prompt: 'Tell me a story' },
      pb.authStore.token,
    )
    expect(sent.status).toBe(200)
    const done = await waitUntil(
      async () => {
        const r = await pb.collection('requests').getOne(sent.body.request_id as string)
        return r.status === 'completed' && r
      },
      10_000,
      'the answer',
    )
    expect(done.node).toBe(node.nodeId)
    expect(done.cost).toBeGreaterThan(0)
    return { id: done.id, cost: Number(done.cost) }
  }

  const nodeRow = (id: string) =>
    db().selectFrom('nodes').selectAll().where('id', '=', id).executeTakeFirstOrThrow()

  it('a new node earns pending credits; passed canaries verify it and pay its owner', async () => {
    const { owner, node } = await newNode()
    const user = await signUp(server, 'customer')
    const first = await paidAnswer(user, node)
    // The user paid; the owner's earning waits, on its balance and on the node (owner only).
    expect(await balanceOf(server, uid(user))).toMatchObject({
      balance: 1000 - first.cost,
      total_spent: first.cost,
    })
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      balance: 1000,
      total_earned: 0,
      pending_earnings: first.cost,
    })
    expect(await owner.collection('nodes').getOne(node.nodeId)).toMatchObject({
      verification: 'probation',
      pending_earnings: first.cost,
    })
    const seen = await user.collection('nodes').getOne(node.nodeId)
    expect(seen.verification).toBe('probation')
    expect(seen).not.toHaveProperty('pending_earnings')
    expect((await txsOf(server, uid(owner))).map((t) => t.type)).toEqual(['credit_admin'])
    // The owner cannot verify its node or set its pending earnings itself: system fields.
    await owner
      .collection('nodes')
      .update(node.nodeId, { verification: 'verified', pending_earnings: 1e6, device_name: 'Mine' })
    expect(await nodeRow(node.nodeId)).toMatchObject({
      device_name: 'Mine',
      verification: 'probation',
      pending_earnings: first.cost * 1000,
    })
    await expectAuditPasses(server)

    agree = true
    const outcomes = []
    for (let i = 0; i < 3; i++)
      outcomes.push(await server.network.canaries.run(node.nodeId, stories))
    expect(outcomes.map((o) => o.status)).toEqual(['passed', 'passed', 'passed'])
    expect(outcomes[2]).toMatchObject({ graduated: true })
    expect(await nodeRow(node.nodeId)).toMatchObject({ verification: 'verified' })
    // Canaries cost nobody anything; what was held is paid to the owner, on the same request.
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      balance: 1000 + first.cost,
      total_earned: first.cost,
      pending_earnings: 0,
    })
    const earned = (await txsOf(server, uid(owner))).filter(
      (t) => t.type === 'credit_inference_request',
    )
    expect(earned).toMatchObject([{ amount: first.cost, request: first.id }])
    // Once verified, an answer is paid at once.
    const second = await paidAnswer(user, node)
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      balance: 1000 + first.cost + second.cost,
      pending_earnings: 0,
    })
    await expectAuditPasses(server)
  })

  it('a node caught by a canary loses its pending earnings to the users who paid', async () => {
    const { owner, node } = await newNode()
    const alice = await signUp(server, 'alice')
    const bob = await signUp(server, 'bob')
    const paid = [
      await paidAnswer(alice, node),
      await paidAnswer(bob, node),
      await paidAnswer(alice, node),
    ]
    const held = paid.reduce((n, p) => n + p.cost, 0)
    expect(await balanceOf(server, uid(owner))).toMatchObject({ pending_earnings: held })
    const reputation = Number((await nodeRow(node.nodeId)).reputation_score)
    await expectAuditPasses(server)

    // Bob's screen hears of the refund (realtime), not only on its next poll.
    const heard: number[] = []
    await bob
      .collection('user_balances')
      .subscribe('*', (e) => heard.push(Number(e.record.balance)))
    agree = false
    const outcome = await server.network.canaries.run(node.nodeId, stories)
    expect(outcome.status).toBe('failed')
    await waitUntil(() => heard.includes(1000), 5000, 'the refund event')
    await bob.collection('user_balances').unsubscribe()
    const after = await nodeRow(node.nodeId)
    expect(after).toMatchObject({ verification: 'probation', pending_earnings: 0 })
    expect(Number(after.reputation_score)).toBeLessThanOrEqual(reputation - 3)
    // The owner got nothing; each payer has every credit back, as a reversal of each request.
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      balance: 1000,
      total_earned: 0,
      pending_earnings: 0,
    })
    for (const pb of [alice, bob]) {
      expect(await balanceOf(server, uid(pb))).toMatchObject({
        balance: 1000,
        held: 0,
        total_spent: 0,
      })
    }
    const reversals = (await txsOf(server, uid(alice))).filter(
      (t) => t.type === 'credit_inference_reversal',
    )
    expect(reversals.map((r) => [r.request, r.amount])).toEqual(
      [paid[0], paid[2]].map((p) => [p.id, p.cost]),
    )
    expect(reversals[0].description).toMatch(/failed verification/)
    // A second failed canary finds nothing left to reverse.
    expect((await server.network.canaries.run(node.nodeId, stories)).status).toBe('failed')
    expect(await balanceOf(server, uid(bob))).toMatchObject({ balance: 1000 })
    await expectAuditPasses(server)
  })

  it('a node deleted on probation returns its pending earnings; a payer who left forfeits', async () => {
    const { owner, node } = await newNode()
    const stays = await signUp(server, 'stays')
    const leaves = await signUp(server, 'leaves')
    const kept = await paidAnswer(stays, node)
    const gone = await paidAnswer(leaves, node)
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      pending_earnings: kept.cost + gone.cost,
    })
    await leaves.collection('users').delete(uid(leaves))
    await expectAuditPasses(server)
    await owner.collection('nodes').delete(node.nodeId)
    expect(await balanceOf(server, uid(stays))).toMatchObject({ balance: 1000, total_spent: 0 })
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      balance: 1000,
      total_earned: 0,
      pending_earnings: 0,
    })
    const rows = await db()
      .selectFrom('_pending_earnings')
      .select(['request', 'status'])
      .where('node', '=', node.nodeId)
      .orderBy('created')
      .execute()
    expect(rows.map((r) => [r.request, r.status]).sort()).toEqual(
      [
        [kept.id, 'reversed'],
        [gone.id, 'forfeited'],
      ].sort(),
    )
    await expectAuditPasses(server)
  })

  it('the operator trusting a node on probation pays what it held', async () => {
    const { owner, node } = await newNode()
    const user = await signUp(server, 'customer')
    const { cost } = await paidAnswer(user, node)
    await setTrusted(db(), node.nodeId, true)
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      balance: 1000 + cost,
      pending_earnings: 0,
      total_earned: cost,
    })
    expect(await nodeRow(node.nodeId)).toMatchObject({
      verification: 'trusted',
      pending_earnings: 0,
    })
    await expectAuditPasses(server)
  })
})
