/**
 * Stop and delete at once: the user presses Stop on an answer being written and deletes its
 * conversation in the same moment. The Stop takes the job from its node at once (in memory) and
 * then writes the cancellation, which pays for the streamed part; the deletion, committing in
 * between, ended the request first (hold released, nothing charged), so the cancellation found no
 * row, and the deletion's own charge of the streamed part found no job left to count (the Stop had
 * taken it). The answer the user had in hand was never paid for. Now a cancellation that finds
 * its request deleted charges the streamed part as a deletion does (at most once). SQLite and
 * PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode, streamThenWait, type HostileNode } from '../support/hostile-node.ts'
import { DbFaults } from '../support/db-faults.ts'
import { expectAuditPasses, txsOf } from '../support/ledger.ts'
import { postJson, waitUntil } from '../support/network.ts'

describe.each(dialects)('[%s] Stop and delete at once', (dialect) => {
  let server: TestServer
  let stories: string
  let node: HostileNode
  let owner: PocketBase
  beforeAll(async () => {
    server = await startTestServer(dialect, { chatRateLimit: 0 })
    stories = await modelId(server)
    ;({ node, owner } = await hostileNode(server, stories))
  })
  afterAll(async () => {
    node?.kill()
    await server?.stop()
  })

  const uid = (pb: PocketBase) => pb.authStore.record!.id
  const streamed = 'Once upon a time there was a little dragon who wanted to fly.'

  /** A conversation whose answer has streamed `streamed` and waits; answers its ids. */
  async function answerInHand(pb: PocketBase) {
    node.behaviour = streamThenWait(streamed)
    const conversation = (
      await pb.collection('conversations').create({ title: 'New Chat', user: uid(pb) })
    ).id
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conversation, model_id: stories, prompt: 'Tell me a story' },
      pb.authStore.token,
    )
    expect(sent.status).toBe(200)
    const id = String(sent.body.request_id)
    await waitUntil(
      async () => {
        const row = await server.core.database.db
          .selectFrom('requests')
          .select('status')
          .where('id', '=', id)
          .executeTakeFirst()
        return row?.status === 'processing'
      },
      5000,
      'answer streaming',
    )
    // The partial text has reached the coordinator (and the user).
    await new Promise((r) => setTimeout(r, 200))
    return { conversation, id }
  }

  const debitsFor = async (user: string, request: string) =>
    (await txsOf(server, user)).filter(
      (t) => t.type === 'debit_inference_request' && t.request === request,
    )

  it('the deletion lands between the Stop and its write: the streamed part is paid once', async () => {
    const pb = await signUp(server, 'stopdelete')
    const { conversation, id } = await answerInHand(pb)
    // The Stop's write is slow to start (a busy database): the deletion commits before it.
    const faults = DbFaults.install(server)
    faults.delay(/^update node_jobs$/, 600)
    const stopping = postJson(
      server,
      '/api/requests/cancel',
      { request_id: id },
      pb.authStore.token,
    )
    await waitUntil(() => faults.delaying.size > 0, 5000, 'the Stop under way')
    await pb.collection('conversations').delete(conversation)
    expect((await stopping).status).toBe(200)
    faults.clear()
    const charged = await waitUntil(
      async () => (await debitsFor(uid(pb), id)).length > 0,
      5000,
      'the streamed part charged',
    ).catch(() => false)
    expect(charged).toBe(true)
    expect(await debitsFor(uid(pb), id)).toHaveLength(1)
    expect(
      (await txsOf(server, uid(owner))).filter(
        (t) => t.type === 'credit_inference_request' && t.request === id,
      ),
    ).toHaveLength(1)
    await expectAuditPasses(server)
  })

  it('pressed together many times, every streamed part is paid exactly once', async () => {
    const pb = await signUp(server, 'stopdelete2')
    const ids: string[] = []
    for (let i = 0; i < 6; i++) {
      const { conversation, id } = await answerInHand(pb)
      ids.push(id)
      await Promise.all([
        postJson(server, '/api/requests/cancel', { request_id: id }, pb.authStore.token),
        pb.collection('conversations').delete(conversation),
      ])
    }
    await new Promise((r) => setTimeout(r, 500))
    for (const id of ids) expect(await debitsFor(uid(pb), id)).toHaveLength(1)
    await expectAuditPasses(server)
  })
})
