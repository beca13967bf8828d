/**
 * Issue 12 item 2 (no tail at concurrency): the work a send and a scheduler pass do must not grow
 * with how many requests wait. These pin the causes found by profiling `bench:network` with many
 * sends in flight; the bench prints the latencies.
 */
import type { KyselyPlugin, RootOperationNode } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { postJson, servingNode, waitUntil } from './support/network.ts'

/** Counts the statements that read `table` (whole rows only, with `selectAll`) while it is
 * installed on the server's database. */
function countReads(server: TestServer, table: string, selectAll = false) {
  const reads = { count: 0 }
  const plugin: KyselyPlugin = {
    transformQuery({ node }) {
      const json = JSON.stringify(node)
      if (
        node.kind === 'SelectQueryNode' &&
        json.includes(`"${table}"`) &&
        (!selectAll || json.includes('"SelectAllNode"'))
      )
        reads.count++
      return node as RootOperationNode
    },
    transformResult: async ({ result }) => result,
  }
  const original = server.core.database.db
  server.core.database.db = original.withPlugin(plugin)
  return { reads, restore: () => (server.core.database.db = original) }
}

describe.each(dialects)('[%s] dispatch with many requests waiting', (dialect) => {
  let server: TestServer
  let model: string

  beforeAll(async () => {
    server = await startTestServer(dialect, {
      initialCredits: 100_000,
      chatRateLimit: 0,
    })
    model = await modelId(server, 'llama-2-tiny-random')
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('a scheduler pass reads the nodes serving a model at most once, not once per waiting request', async () => {
    const { node } = await servingNode(server, model)
    node.script = 'hang' // takes the first job and keeps its only slot
    const user = await signUp(server, 'sender')
    const send = async () => {
      const conversation = await user
        .collection('conversations')
        .create({ title: 'c', user: user.authStore.record!.id })
      const res = await postJson(
        server,
        '/api/chat/send',
        { conversation_id: conversation.id, model_id: model, prompt: 'hi' },
        user.authStore.token,
      )
      expect(res.status).toBe(200)
    }
    await send()
    await waitUntil(() => node.jobs[0], 5000, 'the first offer')
    for (let i = 0; i < 6; i++) await send()
    const scheduler = server.network.scheduler
    await waitUntil(() => scheduler.queued === 6 && !scheduler['pumping'], 5000, 'six waiting')

    const { reads, restore } = countReads(server, 'node_models')
    try {
      await scheduler['pump']()
    } finally {
      restore()
    }
    expect(scheduler.queued).toBe(6)
    // Once, or not at all while the scheduler holds them (scheduler/candidate-cache.ts).
    expect(reads.count).toBeLessThanOrEqual(1)
    // Its only node gone, they wait a moment for it to come back (it stays online for a second),
    // then fail: none is left for the next test's node.
    node.kill()
    await waitUntil(() => scheduler.queued === 0 && !scheduler.running, 15_000, 'waiting ended')
  })

  it('an offer reads back neither its job row nor the request the send stored', async () => {
    const { node } = await servingNode(server, model)
    const user = await signUp(server, 'onejob')
    const conversation = await user
      .collection('conversations')
      .create({ title: 'c', user: user.authStore.record!.id })
    const events: string[] = []
    const stop = server.core.events.on((change) => {
      if (change.collection.name === 'node_jobs')
        events.push(`${change.action} ${change.row.status}`)
    })
    const db = server.core.database.db // the test's own reads, not counted
    const { reads, restore } = countReads(server, 'node_jobs')
    // The request row the send stored goes to the scheduler with it: not read again to offer it.
    const requestRows = countReads(server, 'requests', true)
    try {
      const res = await postJson(
        server,
        '/api/chat/send',
        { conversation_id: conversation.id, model_id: model, prompt: 'hi' },
        user.authStore.token,
      )
      const requestId = String(res.body.request_id)
      await waitUntil(
        async () =>
          (
            await db
              .selectFrom('node_jobs')
              .select('status')
              .where('request', '=', requestId)
              .executeTakeFirst()
          )?.status === 'completed',
        5000,
        'the job completed',
      )
    } finally {
      requestRows.restore()
      restore()
      stop()
      node.kill()
    }
    // The scheduler's writes publish the rows they returned: nothing read back.
    expect(reads.count).toBe(0)
    expect(requestRows.reads.count).toBe(0)
    expect(events).toEqual(['create pending', 'update acked', 'update completed'])
  })
})
