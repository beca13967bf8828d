/**
 * Infrastructure outages, scaled out (two coordinators on PostgreSQL + Redis): Redis killed (-9)
 * and started again empty, and the coordinators' PostgreSQL connections terminated mid-request and
 * mid-settlement. Each case either pins a bug found by this sweep (it failed before its fix) or
 * shows, once, behaviour that was already right. The suite starts its own Redis
 * (`redis-server --save '' --appendonly no` on a free port) and never touches TEST_REDIS_URL's.
 * Runs when TEST_DATABASE_URL and TEST_REDIS_URL are set (CI sets both).
 */
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { signUp, type TestServer } from '../harness.ts'
import { requestRowOf, sendInNewConversation, servingNode, waitUntil } from '../support/network.ts'
import { balanceOf, expectAuditPasses } from '../support/ledger.ts'
import type { OwnRedis } from '../support/own-redis.ts'
import { filtered, openStream, postSubscriptions } from '../support/sse.ts'
import { outageNetwork, redisState, TwoCoordinators } from '../support/two-coordinators.ts'
import { unhandledDuringSuite } from '../support/unhandled.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL
if (!redisUrl || !databaseUrl)
  console.log('sweep-outages.test.ts: skipped (set TEST_DATABASE_URL and TEST_REDIS_URL)')

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const send = async (server: TestServer, pb: Awaited<ReturnType<typeof signUp>>, model: string) =>
  (await sendInNewConversation(server, pb, { title: 'Outage', model, prompt: 'Hello' })).request

describe.runIf(redisUrl && databaseUrl)('Redis outages, two coordinators [postgres]', () => {
  const unhandled = unhandledDuringSuite()
  const coordinators = new TwoCoordinators()
  let redis: OwnRedis
  let a: TestServer
  let b: TestServer

  async function pair() {
    ;({ redis, a, b } = await coordinators.start({}, { network: outageNetwork }))
  }

  afterEach(async () => {
    await coordinators.stop()
    expect(unhandled).toEqual([])
  })

  it("Redis killed and started empty: nobody takes over a live process's requests, each runs and is paid once", async () => {
    await pair()
    const stories = await modelId(a)
    const { node } = await servingNode(a, stories) // its socket on A, like A's requests
    node.script = 'hang' // streams two chunks, then waits for the test to end it
    const pb = await signUp(a, 'outage')
    const user = pb.authStore.record!.id
    // The user watches their requests on B's realtime stream.
    const stream = await openStream(b.url)
    const subscribed = await postSubscriptions(
      b.url,
      stream.clientId,
      [filtered('requests', `user = "${user}"`)],
      pb.authStore.token,
    )
    expect(subscribed.status).toBe(204)
    const running = await send(a, pb, stories)
    await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node')
    const queued = await send(a, pb, stories)

    await redis.kill()
    await waitUntil(async () => (await redisState(a)) === 'offline', 10_000, 'health: Redis down')
    // Down for longer than a lease: nobody can renew, nobody can tell who is alive.
    await sleep(outageNetwork.leaseTtlMs + 500)
    await redis.start()
    await waitUntil(async () => (await redisState(b)) === 'online', 10_000, 'health: Redis up')
    // What was published meanwhile reached no stream: B ends its streams, whose clients
    // reconnect and refetch (the web app does on PB_CONNECT).
    await waitUntil(() => stream.ended, 10_000, "B's stream ended once the bus was back")
    await sleep(2 * outageNetwork.leaseTtlMs)
    // Restarted in a blink, between two of A's renewals (every 375 ms): A sees no error, but its
    // lease is gone with the data while B looks (every 100 ms).
    for (let i = 0; i < 3; i++) {
      await redis.kill()
      await redis.start()
      await sleep(outageNetwork.leaseTtlMs)
    }

    // A was alive all along: B must not have failed A's running request or run its queued one.
    expect(await requestRowOf(a, running)).toMatchObject({
      status: 'processing',
      lease_owner: a.core.processId,
    })
    expect(await requestRowOf(a, queued)).toMatchObject({
      status: 'pending',
      lease_owner: a.core.processId,
    })
    // The user's app reconnects to B and subscribes again.
    const again = await openStream(b.url)
    expect(
      (
        await postSubscriptions(
          b.url,
          again.clientId,
          [filtered('requests', `user = "${user}"`)],
          pb.authStore.token,
        )
      ).status,
    ).toBe(204)
    node.script = 'stream'
    const done = (jobId: string) =>
      node.send({
        type: 'job_done',
        job_id: jobId,
        tokens_input: 1,
        tokens_output: 2,
        processing_time_ms: 42,
      })
    done(node.jobs[0].job_id)
    for (const id of [running, queued]) {
      await waitUntil(
        async () => (await requestRowOf(a, id)).status === 'completed',
        10_000,
        `request ${id} answered`,
      )
      expect(await requestRowOf(a, id)).toMatchObject({
        lease_owner: a.core.processId,
        reserved: 0,
      })
    }
    expect(node.jobs.length).toBe(2) // one job each: nothing ran twice
    expect(node.frames.filter((f) => f.type === 'job_cancel')).toEqual([])
    const costs = (await Promise.all([requestRowOf(a, running), requestRowOf(a, queued)])).map(
      (r) => Number(r.cost),
    )
    expect(costs.every((c) => c > 0)).toBe(true)
    expect(await balanceOf(a, user)).toMatchObject({
      held: 0,
      total_spent: (costs[0] + costs[1]) / 1000,
    })
    await expectAuditPasses(a)
    // B's bus subscribed again: the queued request's end (written on A) reached B's new stream.
    await waitUntil(
      () =>
        again.events.some(
          (e) =>
            e.data.record &&
            (e.data.record as { id: string; status: string }).id === queued &&
            (e.data.record as { status: string }).status === 'completed',
        ),
      10_000,
      'completion event on B',
    )
    await again.close()
    await stream.close()
    node.kill()
  }, 60_000)
})

/** A connection of its own to the test database, as an operator's psql would be. */
async function adminClient() {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  return client
}

/** The backends of `server`'s pool: as many concurrent reads as the pool holds connections. */
async function backendsOf(server: TestServer): Promise<number[]> {
  const rows = await Promise.all(
    Array.from({ length: 10 }, () =>
      sql<{ pid: number }>`SELECT pg_backend_pid() AS pid, pg_sleep(0.05)`.execute(
        server.core.database.db,
      ),
    ),
  )
  return [...new Set(rows.map((r) => Number(r.rows[0].pid)))]
}

describe.runIf(redisUrl && databaseUrl)('PostgreSQL connections dropped [postgres]', () => {
  const unhandled = unhandledDuringSuite()
  const coordinators = new TwoCoordinators()
  let a: TestServer
  let admin: pg.Client

  beforeAll(async () => {
    ;({ a } = await coordinators.start({}, { network: outageNetwork }))
    admin = await adminClient()
  })
  afterAll(async () => {
    await admin?.end()
    await coordinators.stop()
  })

  async function listOk(pb: Awaited<ReturnType<typeof signUp>>) {
    const res = await fetch(`${a.url}/api/collections/conversations/records`, {
      headers: { Authorization: pb.authStore.token },
    })
    return res.status
  }

  it('every connection of a coordinator terminated mid-answer: the pool recovers, the answer is paid once', async () => {
    const stories = await modelId(a)
    const { node } = await servingNode(a, stories)
    node.chunkDelayMs = 300
    const pb = await signUp(a, 'pgdrop')
    const user = pb.authStore.record!.id
    const id = await send(a, pb, stories)
    await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node')
    const pids = await backendsOf(a)
    await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) pid', [pids])
    // Past the moment itself (a call that picked a connection as it died may fail), every call
    // is answered: the pool has dropped the dead connections and opens new ones. The moment ends
    // when the backends are gone (on a loaded machine that took more than the 200 ms waited
    // before, and a list call met a backend still dying), and the pool has read their close.
    await waitUntil(
      async () =>
        (
          await admin.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1::int[])',
            [pids],
          )
        ).rows[0].n === 0,
      10_000,
      'the terminated backends gone',
    )
    await sleep(200)
    const statuses = []
    for (let i = 0; i < 20; i++) statuses.push(await listOk(pb))
    expect(statuses.every((s) => s === 200)).toBe(true)
    await waitUntil(
      async () => (await requestRowOf(a, id)).status === 'completed',
      15_000,
      'request answered',
    )
    const row = await requestRowOf(a, id)
    expect(row).toMatchObject({ reserved: 0, response: 'Once upon a time' })
    expect(await balanceOf(a, user)).toMatchObject({
      held: 0,
      total_spent: Number(row.cost) / 1000,
    })
    await expectAuditPasses(a)
    expect(unhandled).toEqual([])
    node.kill()
  })

  it("the settlement's connection terminated while it waits for a lock: tried again, the answer kept and paid once, no crash", async () => {
    const stories = await modelId(a)
    const { node } = await servingNode(a, stories)
    node.script = 'hang'
    const pb = await signUp(a, 'pgsettle')
    const user = pb.authStore.record!.id
    const id = await send(a, pb, stories)
    await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node')
    // An operator's transaction holds the user's balance row: the settlement waits for it.
    const schema = a.core.config.databaseSchema
    await admin.query('BEGIN')
    await admin.query(`SELECT 1 FROM ${schema}.user_balances WHERE "user" = $1 FOR UPDATE`, [user])
    // The answer the node produced, then its end.
    node.send({ type: 'job_chunk', job_id: node.jobs[0].job_id, text: 'Hello to you' })
    node.send({
      type: 'job_done',
      job_id: node.jobs[0].job_id,
      tokens_input: 1,
      tokens_output: 2,
      processing_time_ms: 42,
    })
    const waiting = await waitUntil(
      async () => {
        const r = await admin.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))',
        )
        return r.rows.length ? r.rows.map((x) => x.pid) : null
      },
      10_000,
      'the settlement waiting for the lock',
    )
    await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) pid', [waiting])
    await admin.query('ROLLBACK')
    await waitUntil(
      async () => (await requestRowOf(a, id)).status === 'completed',
      15_000,
      'request settled',
    )
    const settled = await requestRowOf(a, id)
    expect(settled).toMatchObject({ reserved: 0, response: 'Hello to you' })
    expect(Number(settled.cost)).toBeGreaterThan(0)
    const after = await balanceOf(a, user)
    expect(after.held).toBe(0)
    expect(Number(after.balance)).toBeLessThan(1000)
    expect(await listOk(pb)).toBe(200)
    await expectAuditPasses(a)
    // The terminated connection was checked out: its 'error' had no listener and ended the process.
    await sleep(200)
    expect(unhandled).toEqual([])
    node.kill()
  })
})
