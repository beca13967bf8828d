/**
 * Hostile nodes that try to keep a job, and the user's hold, alive without answering: empty chunks
 * (which used to reset the stall timer for ever) and a trickle of text just fast enough never to
 * look stalled. Empty chunks are no sign of life; every job has an overall deadline from its budget
 * and a conservative speed, which no frame extends. The job is taken away, the node loses
 * reputation, the user's hold is released and nothing of the discarded text is paid; the audit
 * passes. Timings are shortened, one at a time so the other cannot end the job first: a stall
 * limit of 1 s against empty chunks, and a deadline of 0.5 s + the budget at 100 tokens/s against
 * the trickle. SQLite and PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { emptyChunks, hostileNode, trickle, type Behaviour } from '../support/hostile-node.ts'
import { balanceOf, expectAuditPasses, txsOf } from '../support/ledger.ts'
import { postJson, waitUntil } from '../support/network.ts'

const shortStall = { stallMs: 1000 }
const shortDeadline = {
  stallMs: 600_000,
  deadline: { floorSpeed: { tokensPerSecond: 100, promptTokensPerSecond: 1000 }, graceMs: 500 },
}

describe.each(dialects)('[%s] hostile nodes: holding a job without answering', (dialect) => {
  let stalling: TestServer
  let deadlined: TestServer
  beforeAll(async () => {
    stalling = await startTestServer(dialect, {}, { network: { scheduler: shortStall } })
    deadlined = await startTestServer(dialect, {}, { network: { scheduler: shortDeadline } })
  })
  afterAll(async () => {
    await stalling.stop()
    await deadlined.stop()
  })

  const uid = (pb: PocketBase) => pb.authStore.record!.id

  /** Runs one chat against a node with `behaviour`; answers the failed request's error message. */
  async function attack(server: TestServer, behaviour: Behaviour) {
    const stories = await modelId(server)
    const { node } = await hostileNode(server, stories)
    node.behaviour = behaviour
    try {
      const pb = await signUp(server, 'victim')
      const conversation = await pb
        .collection('conversations')
        .create({ title: 'New Chat', user: uid(pb) })
      const sent = await postJson(
        server,
        '/api/chat/send',
        { conversation_id: conversation.id, model_id: stories, prompt: 'Hello there' },
        pb.authStore.token,
      )
      const id = sent.body.request_id as string
      const job = await node.firstJob()
      expect((await balanceOf(server, uid(pb))).held).toBeGreaterThan(0)
      const failed = await waitUntil(
        async () => {
          const r = await pb.collection('requests').getOne(id)
          return r.status === 'failed' && r
        },
        20_000,
        'the job taken away',
      )
      expect(node.cancelled(job)).toBe(true)
      expect(failed.can_retry).toBe(true)
      expect(await balanceOf(server, uid(pb))).toMatchObject({ balance: 1000, held: 0 })
      expect((await txsOf(server, uid(pb))).map((t) => t.type)).toEqual(['credit_admin'])
      const reputation = (await pb.collection('nodes').getOne(node.nodeId)).reputation_score
      expect(reputation).toBeLessThan(5)
      await expectAuditPasses(server)
      return String(failed.error_message)
    } finally {
      node.kill()
    }
  }

  it('empty chunks are no sign of life: the job is taken at the stall limit', async () => {
    expect(await attack(stalling, emptyChunks(50))).toMatch(/The node stopped responding/)
  })

  it('a trickle that never stalls still ends at the job deadline', async () => {
    // One character every 300 ms, for ever. The deadline for this request (2 input and 256 output
    // tokens) is 0.5 s + 2.58 s.
    expect(await attack(deadlined, trickle(300))).toMatch(/The node took too long/)
  })
})
