/**
 * A failed answer has two buttons: Retry (the same request runs again) and Regenerate (a new
 * request replaces it). Pressed together (two tabs, a double click, a script), both checked the
 * request was failed and not replaced before their transactions, and neither transaction checked
 * again what the other one changes: the regenerate marked the request replaced while the retry
 * put it back to pending. Both ran and both were charged, and the retried one, replaced, is left
 * out of the conversation the user reads: an answer paid for and never shown. Now each guard
 * holds inside its transaction: a retry only of a request not replaced, a regenerate only of one
 * that has ended. SQLite and PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { DbFaults } from '../support/db-faults.ts'
import { expectAuditPasses } from '../support/ledger.ts'
import {
  postJson,
  requestEnded,
  servingNode,
  waitUntil,
  type FakeNode,
} from '../support/network.ts'

describe.each(dialects)('[%s] Retry and Regenerate of one failed answer at once', (dialect) => {
  let server: TestServer
  let stories: string
  let node: FakeNode
  beforeAll(async () => {
    server = await startTestServer(dialect, { chatRateLimit: 0 })
    stories = await modelId(server)
    node = (await servingNode(server, stories)).node
  })
  afterAll(async () => {
    node?.kill()
    await server?.stop()
  })

  const rows = (user: string) =>
    server.core.database.db
      .selectFrom('requests')
      .select(['id', 'status', 'replaced_by', 'cost'])
      .where('user', '=', user)
      .execute()

  async function failedAnswer(pb: PocketBase) {
    const conversation = await pb.collection('conversations').create({ title: 'New Chat' })
    node.script = 'fail'
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conversation.id, model_id: stories, prompt: 'Tell me a story' },
      pb.authStore.token,
    )
    expect(sent.status).toBe(200)
    const id = String(sent.body.request_id)
    const ended = await requestEnded(server, id)
    expect(ended.status).toBe('failed')
    return id
  }

  it('runs one of them, never a replaced request', async () => {
    const pb = await signUp(server, 'twobuttons')
    const user = pb.authStore.record!.id
    const failed = await failedAnswer(pb)
    node.script = 'stream'
    node.chunkDelayMs = 300 // the retried answer is still being written when the regenerate commits
    // The regenerate has checked the request (failed, not replaced) and reads its conversation
    // slowly (a busy database): the retry runs whole in that moment.
    const faults = DbFaults.install(server)
    faults.delay(/^select conversations$/, 400)
    const regenerating = postJson(
      server,
      '/api/chat/regenerate',
      { request_id: failed },
      pb.authStore.token,
    )
    await waitUntil(() => faults.delaying.size > 0, 5000, 'regenerate reading the conversation')
    const retry = await postJson(
      server,
      '/api/requests/retry',
      { request_id: failed },
      pb.authStore.token,
    )
    const regenerate = await regenerating
    faults.clear()
    await waitUntil(
      async () => (await rows(user)).every((r) => !['pending', 'processing'].includes(r.status)),
      10_000,
      'every request ended',
    )
    node.chunkDelayMs = 20
    // One of the two runs (which one depends on the database's order). Before, both did: the
    // retried answer was replaced (hidden) while it was written, and charged when it ended.
    expect([retry.status, regenerate.status].sort()).toEqual([200, 400])
    const all = await rows(user)
    expect(all.filter((r) => r.replaced_by !== '' && Number(r.cost) > 0)).toEqual([])
    expect(all.filter((r) => r.status === 'completed')).toHaveLength(1)
    await expectAuditPasses(server)
  })
})
