/**
 * Delete mid-answer, then spend what the deletion freed: deleting a conversation while its answer
 * streams ended the request in the deleting transaction and released its whole hold; the
 * scheduler charged the streamed part afterwards "at most what is free beside other holds"
 * (chargeDeletedRequest). Between the deletion's commit and that charge the user took the freed
 * credits with new holds (sends, regenerates, retries, /v1 calls): the charge then found nothing
 * free and charged nothing, and the new requests were stopped while queued (free) or answered by
 * the user's own node (free). The answer already streamed was never paid for. Now the deletion of
 * a request with a job out keeps its hold (`_deletion_holds`, `held` unchanged) until the
 * streamed part is charged from it; the new sends cannot take it. SQLite and PostgreSQL, and
 * scaled out (PostgreSQL and Redis): the request running on one process, the deletion and the
 * sends made through the other, whose record event has to reach the first for the charge.
 *
 * The window is opened here by a slow database on the charge's first statement (the charge is the
 * scheduler's: in production it follows the deletion by the time a record event takes to reach the
 * process holding the request, over Redis when scaled out); an attacker only needs the holds to
 * land in it, and loses nothing when they miss.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startPeerServer, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode, streamThenWait } from '../support/hostile-node.ts'
import { DbFaults } from '../support/db-faults.ts'
import { adjustBalance, balanceOf, expectAuditPasses, txsOf } from '../support/ledger.ts'
import { postJson, waitUntil } from '../support/network.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL

const uid = (pb: PocketBase) => pb.authStore.record!.id
const newChat = async (pb: PocketBase) =>
  (await pb.collection('conversations').create({ title: 'New Chat', user: uid(pb) })).id

/**
 * The attack: the request runs on `running` (its node's socket there); the conversation is deleted
 * and the freed credits spent through `other` (the same process when not scaled out).
 */
async function deleteThenSpend(running: TestServer, other: TestServer) {
  const stories = await modelId(running)
  const send = (server: TestServer, pb: PocketBase, conversation: string) =>
    postJson(
      server,
      '/api/chat/send',
      { conversation_id: conversation, model_id: stories, prompt: 'Tell me a story' },
      pb.authStore.token,
    )
  const { node } = await hostileNode(running, stories)
  const streamed = 'Once upon a time there was a little dragon who wanted to fly. '.repeat(2)
  node.behaviour = streamThenWait(streamed)
  const pb = await signUp(running, 'freeloader')
  // 300 credits: one answer's hold and a little more.
  await adjustBalance(running, uid(pb), -700)
  const conversation = await newChat(pb)
  let seen: (text: string) => void = () => {}
  const partial = new Promise<string>((r) => (seen = r))
  await pb.collection('requests').subscribe('*', (e) => {
    if (e.record.is_partial && e.record.response) seen(String(e.record.response))
  })
  const sent = await send(running, pb, conversation)
  expect(sent.status).toBe(200)
  const id = String(sent.body.request_id)
  // The user has the streamed text in hand.
  expect(await partial).toBe(streamed)
  await pb.collection('requests').unsubscribe()

  // Later offers are never accepted: the new requests stay queued, to be stopped for free.
  node.behaviour = async () => {}
  const faults = DbFaults.install(running)
  // Every node update is slow for a while, the charge's first statement among them (scaled out,
  // the charge comes after the record event's trip, behind other updates of nodes).
  faults.delay(/^update nodes$/, 800, Infinity)
  const elsewhere = other.client()
  elsewhere.authStore.save(pb.authStore.token, pb.authStore.record)
  await elsewhere.collection('conversations').delete(conversation)
  await waitUntil(() => faults.delaying.size > 0, 5000, 'the charge under way')
  // In the window: hold every credit the deletion freed.
  const next = await newChat(elsewhere)
  const holds: string[] = []
  for (let i = 0; i < 10; i++) {
    const r = await send(other, elsewhere, next)
    if (r.status !== 200) break
    holds.push(String(r.body.request_id))
  }
  expect(holds.length).toBeGreaterThan(0)
  await new Promise((r) => setTimeout(r, 1500))
  faults.clear()
  for (const h of holds)
    await postJson(other, '/api/requests/cancel', { request_id: h }, pb.authStore.token)

  const debits = (await txsOf(running, uid(pb))).filter((t) => t.type === 'debit_inference_request')
  // What the user saw was streamed: it is paid for in full (before: no debit at all, balance 300).
  const cost = Math.floor('Tell me a story'.length / 4) + Math.floor(streamed.length / 4)
  expect(debits.filter((t) => t.request === id)).toMatchObject([{ amount: cost }])
  expect((await balanceOf(running, uid(pb))).balance).toBeLessThan(300)
  await expectAuditPasses(running)
  node.kill()
}

describe.each(dialects)('[%s] deleting mid-answer while taking the freed credits', (dialect) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(dialect, { chatRateLimit: 0 })
  })
  afterAll(() => server.stop())

  it('the streamed part is still charged', () => deleteThenSpend(server, server))
})

describe.runIf(redisUrl && databaseUrl)(
  '[postgres, scaled out] deleting mid-answer on one process, spending on it while the other charges',
  () => {
    let a: TestServer
    let b: TestServer
    beforeAll(async () => {
      a = await startTestServer('postgres', { redisUrl, chatRateLimit: 0 })
      b = await startPeerServer(a, { redisUrl, chatRateLimit: 0 })
    })
    afterAll(async () => {
      await b.close()
      await a.stop()
    })

    it('the streamed part is still charged, by the process running it', () => deleteThenSpend(a, b))
  },
)
