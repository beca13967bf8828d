/**
 * Self-dealing: an owner chatting with its own node used to pay itself and farm reputation (5 ->
 * 7.5 in 25 requests). Now such a request is free (no debit, no credit, its hold released, cost 0)
 * and moves neither the node's reputation nor its request count; a stranger's request still pays
 * and counts. Throw-away accounts spending their sign-up credits on their owner's node can move no
 * more than the sign-up limit per address lets in (five attempted, two allowed beside the owner's).
 * The audit passes throughout. SQLite and PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode } from '../support/hostile-node.ts'
import { balanceOf, expectAuditPasses, txsOf } from '../support/ledger.ts'
import { postJson, waitUntil } from '../support/network.ts'

describe.each(dialects)('[%s] hostile owners: chatting with their own node', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    stories = await modelId(server)
  })
  afterAll(() => server.stop())

  const uid = (pb: PocketBase) => pb.authStore.record!.id
  async function chat(pb: PocketBase, prompt: string) {
    const conversation = await pb
      .collection('conversations')
      .create({ title: 'New Chat', user: uid(pb) })
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conversation.id, model_id: stories, prompt },
      pb.authStore.token,
    )
    expect(sent.status).toBe(200)
    const id = sent.body.request_id as string
    return waitUntil(
      async () => {
        const r = await pb.collection('requests').getOne(id)
        return r.status === 'completed' && r
      },
      10_000,
      'the answer',
    )
  }

  it('five throw-away accounts for its node: sign-ups per address bound what they can move', async () => {
    // The owner signed up from this address already; the limit lets two more through.
    const limited = await startTestServer(dialect, { signupLimit: 3 })
    try {
      const model = await modelId(limited)
      const owner = await signUp(limited, 'farmer')
      const { node } = await hostileNode(limited, model, owner)
      const emails = Array.from(
        { length: 5 },
        (_, i) => `throwaway${i}${Date.now().toString(36)}@example.com`,
      )
      const attempts = await Promise.all(
        emails.map((email) =>
          postJson(limited, '/api/collections/users/records', {
            email,
            password: 'password123',
            passwordConfirm: 'password123',
          }),
        ),
      )
      const made = emails.filter((_, i) => attempts[i].status === 200)
      expect(made).toHaveLength(2)
      expect(attempts.filter((a) => a.status === 429)).toHaveLength(3)
      // The two that exist spend everything they can on the owner's node.
      for (const email of made) {
        const pb = limited.client()
        await pb.collection('users').authWithPassword(email, 'password123')
        const conversation = await pb
          .collection('conversations')
          .create({ title: 'New Chat', user: uid(pb) })
        const sent = await postJson(
          limited,
          '/api/chat/send',
          { conversation_id: conversation.id, model_id: model, prompt: 'x'.repeat(2000) },
          pb.authStore.token,
        )
        const id = sent.body.request_id as string
        await waitUntil(
          async () => (await pb.collection('requests').getOne(id)).status === 'completed',
          10_000,
          'the answer',
        )
      }
      const gained = ((await balanceOf(limited, uid(owner))).balance as number) - 1000
      expect(gained).toBeGreaterThan(0)
      expect(gained).toBeLessThanOrEqual(2 * 1000) // at most the credits the limit let in
      await expectAuditPasses(limited)
      node.kill()
    } finally {
      await limited.stop()
    }
  })

  it('is free and earns no reputation; a stranger still pays and counts', async () => {
    const owner = await signUp(server, 'farmer')
    const { node } = await hostileNode(server, stories, owner)
    node.tokensInputReported = 10_000 // a node's own counts change nothing either
    try {
      for (let i = 0; i < 5; i++) {
        const answer = await chat(owner, `Tell me story number ${i}`)
        expect(answer).toMatchObject({ response: 'Once upon a time', node: node.nodeId, cost: 0 })
      }
      expect(await balanceOf(server, uid(owner))).toMatchObject({
        balance: 1000,
        held: 0,
        total_earned: 0,
        total_spent: 0,
      })
      expect((await txsOf(server, uid(owner))).map((t) => t.type)).toEqual(['credit_admin'])
      const farmed = await owner.collection('nodes').getOne(node.nodeId)
      expect(farmed).toMatchObject({ reputation_score: 5, total_requests: 0 })
      await expectAuditPasses(server)

      const stranger = await signUp(server, 'stranger')
      const paid = await chat(stranger, 'Tell me a story')
      const cost = Math.floor('Tell me a story'.length / 4) + 4
      expect(paid.cost).toBe(cost)
      expect(await balanceOf(server, uid(owner))).toMatchObject({
        balance: 1000 + cost,
        total_earned: cost,
      })
      const counted = await owner.collection('nodes').getOne(node.nodeId)
      expect(counted.total_requests).toBe(1)
      expect(counted.reputation_score).toBeCloseTo(5.1)
      await expectAuditPasses(server)
    } finally {
      node.kill()
    }
  })
})
