/**
 * Issue 8, "no request outlives its process": two coordinators on PostgreSQL + Redis; the one that
 * scheduled a request stops renewing its lease (as a killed process would) and the survivor takes
 * its requests over: the running one fails retryable with its hold released and its node is told
 * to stop, the queued one runs on the survivor. And a graceful drain hands the queue over.
 * Runs when TEST_DATABASE_URL and TEST_REDIS_URL are set (CI sets both); the real-process suite
 * behind a load balancer is load-balancer.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { TAKEN_OVER_MESSAGE } from '../src/core/scheduler/takeover.ts'
import { modelId } from './fixtures.ts'
import { signUp, startTestServer, type TestServer } from './harness.ts'
import { postJson, servingNode, waitUntil } from './support/network.ts'
import { balanceOf, expectAuditPasses } from './support/ledger.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL
if (!redisUrl || !databaseUrl)
  console.log('takeover.test.ts: skipped (set TEST_DATABASE_URL and TEST_REDIS_URL)')

const network = {
  heartbeatTimeoutMs: 3000,
  leaseTtlMs: 1500,
  takeoverIntervalMs: 300,
  scheduler: { stallMs: 30_000, offerTimeoutMs: 10_000 },
}

async function pair() {
  const a = await startTestServer('postgres', { redisUrl }, { network })
  const shared = {
    redisUrl,
    databaseSchema: a.core.config.databaseSchema,
    dataDir: a.core.config.dataDir,
  }
  const b = await startTestServer('postgres', shared, { network })
  return { a, b, shared }
}

async function send(
  server: TestServer,
  pb: Awaited<ReturnType<typeof signUp>>,
  model: string,
  prompt: string,
) {
  const conversation = await pb.collection('conversations').create({ title: 'Leased' })
  const sent = await postJson(
    server,
    '/api/chat/send',
    { conversation_id: conversation.id, model_id: model, prompt },
    pb.authStore.token,
  )
  expect(sent.status).toBe(200)
  return sent.body.request_id as string
}

const rowOf = (server: TestServer, id: string) =>
  server.core.database.db
    .selectFrom('requests')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow()

describe.runIf(redisUrl && databaseUrl)('request leases between coordinators [postgres]', () => {
  it("a surviving process takes over a dead one's requests: running fails retryable, queued runs", async () => {
    const { a, b } = await pair()
    try {
      const stories = await modelId(a)
      const { node } = await servingNode(a, stories, b)
      node.script = 'hang'
      const pb = await signUp(a, 'leased')
      const user = pb.authStore.record!.id
      const running = await send(a, pb, stories, 'Hello')
      await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node on B')
      const queued = await send(a, pb, stories, 'Tell me a story')
      expect((await rowOf(a, queued)).lease_owner).toBe(a.core.processId)
      node.script = 'stream'
      // A dies: its bus goes first (nothing more reaches anyone), then the rest; its lease lapses.
      await a.core.bus.close()
      await a.close()
      await waitUntil(
        async () => (await rowOf(b, running)).status === 'failed',
        15_000,
        'running request failed',
      )
      expect(await rowOf(b, running)).toMatchObject({
        can_retry: 1,
        error_message: TAKEN_OVER_MESSAGE,
        reserved: 0,
      })
      // The node was told to stop the orphan job, and its slot served the queued request.
      expect(
        node.frames.some((f) => f.type === 'job_cancel' && f.job_id === node.jobs[0].job_id),
      ).toBe(true)
      await waitUntil(
        async () => (await rowOf(b, queued)).status === 'completed',
        15_000,
        'queued request answered on B',
      )
      expect(await rowOf(b, queued)).toMatchObject({
        response: 'Once upon a time',
        lease_owner: b.core.processId,
        reserved: 0,
      })
      expect(await balanceOf(b, user)).toMatchObject({ held: 0 })
      await expectAuditPasses(b)
      node.kill()
    } finally {
      await b.stop()
    }
  })

  it('a draining process lets its answer finish and hands its queue to the other', async () => {
    const { a, b } = await pair()
    try {
      const stories = await modelId(a)
      const { node } = await servingNode(a, stories, b)
      node.chunkDelayMs = 300
      const pb = await signUp(a, 'drained')
      const user = pb.authStore.record!.id
      const first = await send(a, pb, stories, 'Hello')
      await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node')
      const second = await send(a, pb, stories, 'Tell me a story')
      await a.network.drain(30_000)
      // The answer in flight finished on A; the queued one was handed to B, which runs it.
      expect(await rowOf(b, first)).toMatchObject({
        status: 'completed',
        response: 'Once upon a time',
      })
      await waitUntil(
        async () => ['completed', 'failed'].includes(String((await rowOf(b, second)).status)),
        15_000,
        'handed-off request ran',
      )
      expect(await rowOf(b, second)).toMatchObject({ status: 'completed' })
      expect((await rowOf(b, second)).lease_owner).toBe(b.core.processId)
      expect(await a.network.leases.alive([a.core.processId])).toEqual(new Set())
      await a.close()
      expect(await balanceOf(b, user)).toMatchObject({ held: 0 })
      await expectAuditPasses(b)
      node.kill()
    } finally {
      await b.stop()
    }
  })
})

describe('drain when alone', () => {
  it('fails the queue retryable with holds released, after the running answer finished', async () => {
    const server = await startTestServer('sqlite')
    try {
      const stories = await modelId(server)
      const { node } = await servingNode(server, stories)
      node.chunkDelayMs = 200
      const pb = await signUp(server, 'alone')
      const user = pb.authStore.record!.id
      const first = await send(server, pb, stories, 'Hello')
      await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node')
      const second = await send(server, pb, stories, 'Tell me a story')
      await server.network.drain(30_000)
      expect(await rowOf(server, first)).toMatchObject({
        status: 'completed',
        response: 'Once upon a time',
      })
      expect(await rowOf(server, second)).toMatchObject({
        status: 'failed',
        can_retry: 1,
        reserved: 0,
      })
      expect(await balanceOf(server, user)).toMatchObject({ held: 0 })
      await expectAuditPasses(server)
      node.kill()
    } finally {
      await server.stop()
    }
  })

  it('fails what still runs at the deadline retryable, and its node is told to stop', async () => {
    const server = await startTestServer('sqlite')
    try {
      const stories = await modelId(server)
      const { node } = await servingNode(server, stories)
      node.script = 'hang'
      const pb = await signUp(server, 'deadline')
      const user = pb.authStore.record!.id
      const id = await send(server, pb, stories, 'Hello')
      await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node')
      await server.network.drain(300)
      expect(await rowOf(server, id)).toMatchObject({ status: 'failed', can_retry: 1, reserved: 0 })
      await waitUntil(
        () => node.frames.some((f) => f.type === 'job_cancel'),
        10_000,
        'the node told to stop',
      )
      expect(await balanceOf(server, user)).toMatchObject({ held: 0 })
      node.kill()
    } finally {
      await server.stop()
    }
  })
})

describe.runIf(redisUrl && databaseUrl)('a restarted process with Redis [postgres]', () => {
  it("takes over what its previous run left once that run's lease lapsed", async () => {
    const first = await startTestServer('postgres', { redisUrl }, { network })
    const shared = {
      redisUrl,
      databaseSchema: first.core.config.databaseSchema,
      dataDir: first.core.config.dataDir,
    }
    const stories = await modelId(first)
    const { node } = await servingNode(first, stories)
    node.script = 'hang'
    const pb = await signUp(first, 'restarted')
    const user = pb.authStore.record!.id
    const running = await send(first, pb, stories, 'Hello')
    await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node')
    const queued = await send(first, pb, stories, 'Tell me a story')
    node.kill()
    // Killed: its bus goes first, then the rest; its lease is left to lapse.
    await first.core.bus.close()
    await first.close()
    const second = await startTestServer('postgres', shared, { network })
    try {
      await waitUntil(
        async () =>
          (await rowOf(second, running)).status === 'failed' &&
          (await rowOf(second, queued)).status !== 'pending',
        20_000,
        'both requests taken over',
      )
      expect(await rowOf(second, running)).toMatchObject({
        can_retry: 1,
        error_message: TAKEN_OVER_MESSAGE,
        reserved: 0,
      })
      // No node is connected to the new run: the queued one ran again and found none.
      expect(await rowOf(second, queued)).toMatchObject({
        status: 'failed',
        can_retry: 1,
        reserved: 0,
        lease_owner: second.core.processId,
      })
      expect(await balanceOf(second, user)).toMatchObject({ balance: 1000, held: 0 })
      await expectAuditPasses(second)
    } finally {
      await second.stop()
    }
  })
})
