/**
 * No unhandled rejections: database errors injected into the node registry's and the scheduler's
 * paths (test/support/db-faults.ts makes chosen statements fail, as a lost connection or a failed
 * write does) never end the coordinator. While and after each fault the process answers
 * /api/health, every affected request ends (completed, or failed retryable with its hold
 * released), the ledger audit passes, and no promise rejection or exception went unhandled in the
 * process (asserted, not only survived). Event listeners that throw neither stop the other
 * listeners nor fail a request that has committed. SQLite, and PostgreSQL with Redis (the Redis
 * bus and node relay) when configured.
 */
import type PocketBase from 'pocketbase'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { DbFaults } from './support/db-faults.ts'
import { hostileNode } from './support/hostile-node.ts'
import { balanceOf, expectAuditPasses } from './support/ledger.ts'
import { FakeNode, linkNode, postJson, servingNode, waitUntil } from './support/network.ts'
import { unhandledDuringSuite } from './support/unhandled.ts'
import { SAVE_FAILED_MESSAGE } from '../src/core/scheduler/scheduler.ts'
import { ORPHAN_AGE_MS } from '../src/core/scheduler/takeover.ts'
import { CANCEL_REQUEST_PATH } from '@meshwork/protocol'

const redisUrl = process.env.TEST_REDIS_URL

describe.each(dialects)('[%s] database faults never end the process', (dialect) => {
  let server: TestServer
  let faults: DbFaults
  let stories: string
  const unhandled = unhandledDuringSuite()

  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      dialect === 'postgres' && redisUrl ? { redisUrl } : {},
      {
        network: { heartbeatTimeoutMs: 2000 },
      },
    )
    faults = DbFaults.install(server)
    stories = await modelId(server)
  })
  afterEach(async () => {
    faults.clear()
    // The process is up and serving, and nothing went unhandled.
    const health = await fetch(`${server.url}/api/health`)
    expect(health.status).toBe(200)
    expect(unhandled).toEqual([])
    await expectAuditPasses(server)
  })
  afterAll(async () => {
    await server?.stop()
  })

  const uid = (pb: PocketBase) => pb.authStore.record!.id
  const newChat = async (pb: PocketBase) =>
    (await pb.collection('conversations').create({ title: 'New Chat', user: uid(pb) })).id
  const send = async (pb: PocketBase, prompt = 'Tell me a story') => {
    const res = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: await newChat(pb), model_id: stories, prompt },
      pb.authStore.token,
    )
    expect(res.status).toBe(200)
    return res.body.request_id as string
  }
  const request = async (id: string) =>
    (await server.core.database.db
      .selectFrom('requests')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()) as Record<string, unknown>
  /** Waits until the request has ended; answers its row. */
  const ended = (id: string, timeoutMs = 20_000) =>
    waitUntil(
      async () => {
        const row = await request(id)
        return ['completed', 'failed'].includes(String(row.status)) && row
      },
      timeoutMs,
      `request ${id} to end`,
    )
  const healthy = async () => (await fetch(`${server.url}/api/health`)).status === 200
  const nodeStatus = async (nodeId: string) =>
    String(
      (
        await server.core.database.db
          .selectFrom('nodes')
          .select('status')
          .where('id', '=', nodeId)
          .executeTakeFirstOrThrow()
      ).status,
    )

  it('node registry: a node connects, says hello and beats while every write of its record fails', async () => {
    const owner = await signUp(server, 'regowner')
    const { nodeId, credential } = await linkNode(server, owner)
    faults.fail(/^update nodes$/)
    const node = new FakeNode(server, nodeId, credential)
    try {
      expect(await node.connect()).toBe('open')
      // Hello, heartbeats (every 100 ms) and their writes all fail; the process stays up.
      await waitUntil(() => faults.count(/^update nodes$/) >= 3, 10_000, 'failed node writes')
      expect(await healthy()).toBe(true)
      expect(await nodeStatus(nodeId)).toBe('offline')
      // The database is back: the next heartbeat's write goes through.
      faults.clear()
      await waitUntil(async () => (await nodeStatus(nodeId)) === 'online', 10_000, 'online')
    } finally {
      node.kill()
    }
  })

  it("node registry: reading a node's desired state and saving its model status fail, then recover", async () => {
    const owner = await signUp(server, 'stateowner')
    const { nodeId, credential } = await linkNode(server, owner)
    const node = new FakeNode(server, nodeId, credential)
    try {
      await node.connect()
      await waitUntil(() => node.frames.some((f) => f.type === 'desired_state'), 10_000, 'state')
      // The owner asks for a model: the desired state the change triggers cannot be read.
      faults.fail(/^select node_models,models$/)
      const nm = await owner
        .collection('node_models')
        .create({ node: nodeId, model: stories, requested_download: true, requested_serving: true })
      await waitUntil(
        () => faults.count(/^select node_models,models$/) >= 1,
        10_000,
        'a failed read',
      )
      expect(await healthy()).toBe(true)
      const wanted = () =>
        node.frames.some(
          (f) => f.type === 'desired_state' && f.node_models.some((m) => m.id === nm.id),
        )
      expect(wanted()).toBe(false)
      // Reads work again: the owner's next change reaches the node, which reports serving.
      faults.clear()
      await owner.collection('node_models').update(nm.id, { requested_serving: true })
      await waitUntil(wanted, 10_000, 'the desired state after the fault')
      const serving = async () =>
        Number(
          (
            await server.core.database.db
              .selectFrom('node_models')
              .select('is_serving')
              .where('id', '=', nm.id)
              .executeTakeFirstOrThrow()
          ).is_serving,
        )
      await waitUntil(async () => (await serving()) === 1, 10_000, 'serving')
      // Saving the node's next report (no longer serving) fails; the one after it is saved.
      const report = {
        type: 'model_status' as const,
        node_model_id: nm.id,
        is_downloaded: true,
        download_progress: 100,
        is_serving: false,
        tokens_per_second: 0,
        error_message: '',
      }
      faults.fail(/^update node_models$/)
      node.send(report)
      await waitUntil(() => faults.count(/^update node_models$/) >= 1, 10_000, 'a failed save')
      expect(await healthy()).toBe(true)
      expect(await serving()).toBe(1)
      faults.clear()
      node.send(report)
      await waitUntil(async () => (await serving()) === 0, 10_000, 'the report saved')
    } finally {
      node.kill()
    }
  })

  it('node registry: a node disconnects while its record cannot be written', async () => {
    const { node } = await servingNode(server, stories)
    faults.fail(/^update nodes$/)
    node.kill()
    await waitUntil(() => faults.count(/^update nodes$/) >= 1, 10_000, 'a failed offline write')
    expect(await healthy()).toBe(true)
  })

  it('scheduler: choosing a node fails for a while; the queued request waits and is then answered', async () => {
    const { node } = await servingNode(server, stories)
    try {
      const pb = await signUp(server, 'choosy')
      faults.fail(/^select node_models,nodes$/, 2)
      const id = await send(pb)
      const row = await ended(id)
      expect(faults.count(/^select node_models,nodes$/)).toBe(2)
      expect(row.status).toBe('completed')
      expect((await balanceOf(server, uid(pb))).held).toBe(0)
    } finally {
      node.kill()
    }
  })

  it('scheduler: choosing a node keeps failing; the request fails retryable, its hold released', async () => {
    const { node } = await servingNode(server, stories)
    try {
      const pb = await signUp(server, 'neverchosen')
      faults.fail(/^select node_models,nodes$/)
      const id = await send(pb)
      // The fault stays: after a few tries (a second apart) the request gives up waiting.
      const row = await ended(id)
      expect(faults.count(/^select node_models,nodes$/)).toBeGreaterThanOrEqual(5)
      faults.clear()
      expect(row).toMatchObject({ status: 'failed', can_retry: 1 })
      expect((await balanceOf(server, uid(pb))).held).toBe(0)
    } finally {
      node.kill()
    }
  })

  it('scheduler: the job row cannot be created; the offer is taken back, the request fails retryable, its hold released', async () => {
    // The offer does not wait for its row (first-token time): the node has it, then is told to stop.
    const { node } = await hostileNode(server, stories)
    node.behaviour = async (job, n) => n.accept(job)
    try {
      const pb = await signUp(server, 'nojob')
      faults.fail(/^insert node_jobs$/, 1)
      const row = await ended(await send(pb))
      expect(faults.count(/^insert node_jobs$/)).toBe(1)
      expect(row).toMatchObject({ status: 'failed', can_retry: 1 })
      expect((await balanceOf(server, uid(pb))).held).toBe(0)
      const job = await node.firstJob()
      await waitUntil(() => node.cancelled(job), 5_000, 'the job taken back')
      const jobs = await server.core.database.db
        .selectFrom('node_jobs')
        .select('id')
        .where('request', '=', row.id)
        .execute()
      expect(jobs).toEqual([])
    } finally {
      node.kill()
    }
  })

  it('scheduler: the offer does not wait for its job row; a node that answers at once is settled after it, in order', async () => {
    const { node } = await hostileNode(server, stories)
    let offeredAt = 0
    node.behaviour = async (job, n) => {
      offeredAt = performance.now()
      n.accept(job)
      n.chunk(job, 'Once upon a time')
      n.done(job, 4)
    }
    try {
      const pb = await signUp(server, 'slowjob')
      faults.delay(/^insert node_jobs$/, 400)
      const row = await ended(await send(pb))
      expect(row).toMatchObject({ status: 'completed', response: 'Once upon a time' })
      const [rowWritten] = faults.released.get('insert node_jobs') ?? []
      expect(offeredAt).toBeGreaterThan(0)
      expect(offeredAt).toBeLessThan(rowWritten)
      // The job's own writes (accepted, completed) came after its row.
      const jobs = await server.core.database.db
        .selectFrom('node_jobs')
        .select('status')
        .where('request', '=', row.id)
        .execute()
      expect(jobs).toEqual([{ status: 'completed' }])
    } finally {
      node.kill()
    }
  })

  /**
   * Runs one answer whose settlement's first statement fails `times` times (a connection that
   * dropped); answers its ended row, the statement's count and the user's balance before and after.
   */
  async function settleFailing(times: number) {
    const { node } = await hostileNode(server, stories)
    let finish = () => {}
    const finishing = new Promise<void>((r) => (finish = r))
    node.behaviour = async (job, n) => {
      n.accept(job)
      n.chunk(job, 'Once upon a time')
      await finishing
      n.done(job, 4)
    }
    try {
      const pb = await signUp(server, 'unsettled')
      const before = await balanceOf(server, uid(pb))
      const id = await send(pb)
      await waitUntil(async () => (await request(id)).status === 'processing', 10_000, 'running')
      faults.fail(/^select requests,models$/, times)
      finish()
      const row = await ended(id)
      const tries = faults.count(/^select requests,models$/)
      faults.clear()
      return { row, tries, before, after: await balanceOf(server, uid(pb)) }
    } finally {
      node.kill()
    }
  }

  it('scheduler: the settlement fails once; it is tried again and the answer is kept, charged once', async () => {
    const { row, tries, before, after } = await settleFailing(1)
    expect(tries).toBe(1)
    expect(row).toMatchObject({ status: 'completed', response: 'Once upon a time' })
    expect(after.held).toBe(0)
    expect(Number(after.balance)).toBeLessThan(Number(before.balance))
    await expectAuditPasses(server)
  })

  it('scheduler: the settlement keeps failing; the request fails retryable, nothing charged, hold released', async () => {
    const { row, tries, before, after } = await settleFailing(Infinity)
    // Tried three times (250 ms and 1 s apart), then given up.
    expect(tries).toBe(3)
    expect(row).toMatchObject({
      status: 'failed',
      can_retry: 1,
      error_message: SAVE_FAILED_MESSAGE,
    })
    expect(after).toMatchObject({ balance: before.balance, held: 0 })
  })

  it('scheduler: failing a request fails on the database; it is retried until the request has ended', async () => {
    const { node } = await servingNode(server, stories)
    node.script = 'fail'
    try {
      const pb = await signUp(server, 'failfail')
      // The node fails the job; no other node: the request fails, and its writes fail three
      // times (the first may be the job's start, marked processing; the rest ending it).
      faults.fail(/^update requests$/, 3)
      const row = await ended(await send(pb))
      expect(faults.count(/^update requests$/)).toBe(3)
      expect(row).toMatchObject({ status: 'failed', can_retry: 1 })
      expect((await balanceOf(server, uid(pb))).held).toBe(0)
    } finally {
      node.kill()
    }
  })

  it('scheduler: a Stop whose write fails on the database is retried; the stopped request never runs', async () => {
    const { node } = await servingNode(server, stories)
    node.script = 'hang' // the first request keeps the node's one slot; the second waits
    try {
      const pb = await signUp(server, 'stopfail')
      const running = await send(pb)
      await waitUntil(() => node.jobs.length === 1, 5000, 'the first job running')
      const queued = await send(pb)
      faults.fail(/^update requests$/, 1)
      const stop = await postJson(
        server,
        CANCEL_REQUEST_PATH,
        { request_id: queued },
        pb.authStore.token,
      )
      expect(stop.status).toBe(200)
      expect(faults.count(/^update requests$/)).toBe(1)
      expect((await request(queued)).status).toBe('cancelled')
      // Past the age at which an open request a process lost track of is adopted and run.
      node.script = 'stream'
      await postJson(server, CANCEL_REQUEST_PATH, { request_id: running }, pb.authStore.token)
      await new Promise((r) => setTimeout(r, ORPHAN_AGE_MS + 3000))
      expect(node.jobs.map((j) => j.request_id)).toEqual([running])
      expect((await request(queued)).status).toBe('cancelled')
      expect((await balanceOf(server, uid(pb))).held).toBe(0)
    } finally {
      node.kill()
    }
  }, 30_000)

  it('a send whose reservation fails answers an error in PocketBase shape and holds nothing', async () => {
    const pb = await signUp(server, 'noreserve')
    const conversation = await newChat(pb)
    faults.fail(/^insert requests$/, 1)
    const res = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conversation, model_id: stories, prompt: 'Hello' },
      pb.authStore.token,
    )
    expect(faults.count(/^insert requests$/)).toBe(1)
    expect(res.status).toBe(500)
    expect(res.body).toMatchObject({ status: 500, data: {} })
    expect(typeof res.body.message).toBe('string')
    expect((await balanceOf(server, uid(pb))).held).toBe(0)
  })

  it('a throwing record listener and a throwing bus handler stop neither the others nor a committed answer', async () => {
    const { node } = await servingNode(server, stories)
    const seenByLater: string[] = []
    const stops = [
      server.core.events.on(() => {
        throw new Error('a broken record listener')
      }),
      server.core.events.on((change) => {
        seenByLater.push(change.collection.name)
      }),
      server.core.bus.subscribe('records', () => {
        throw new Error('a broken bus handler')
      }),
    ]
    let seenOnBus = 0
    stops.push(server.core.bus.subscribe('records', () => seenOnBus++))
    try {
      const pb = await signUp(server, 'listened')
      const events: string[] = []
      await pb.collection('requests').subscribe('*', (e) => events.push(String(e.record.status)))
      const before = Number((await balanceOf(server, uid(pb))).balance)
      const id = await send(pb)
      const row = await ended(id)
      // The answer committed and stays so: completed and paid, not failed by the listener.
      expect(row.status).toBe('completed')
      expect((await balanceOf(server, uid(pb))).balance).toBeLessThan(before)
      await waitUntil(() => events.includes('completed'), 10_000, 'the realtime event')
      expect(seenByLater).toContain('requests')
      await waitUntil(() => seenOnBus > 0, 10_000, 'the later bus handler')
      await pb.collection('requests').unsubscribe()
    } finally {
      for (const stop of stops) stop()
      node.kill()
    }
  })
})
