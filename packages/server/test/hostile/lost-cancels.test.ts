/**
 * A `job_cancel` that never reached the process holding the node's socket, scaled out (two
 * coordinators on PostgreSQL and a Redis of the test's own). The request runs on A; its node's
 * socket is on B, so A's frames to the node go over the bus. When one is lost (Redis down, or one
 * message dropped) the node used to run the job to its end: its slot busy, its answer going
 * nowhere. B now checks the jobs it relays against the database when its bus is back and on every
 * registry sweep, and stops those whose request or job has ended or is gone.
 * Runs when TEST_DATABASE_URL and TEST_REDIS_URL are set (CI sets both).
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { ServerToNodeFrame } from '@meshwork/protocol'
import { modelId } from '../fixtures.ts'
import { signUp, type TestServer } from '../harness.ts'
import {
  postJson,
  requestRowOf,
  sendInNewConversation,
  servingNode,
  waitUntil,
  type FakeNode,
} from '../support/network.ts'
import type { OwnRedis } from '../support/own-redis.ts'
import { outageNetwork, redisState, TwoCoordinators } from '../support/two-coordinators.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL
if (!redisUrl || !databaseUrl)
  console.log('lost-cancels.test.ts: skipped (set TEST_DATABASE_URL and TEST_REDIS_URL)')

/** The registry's sweep: every heartbeatTimeoutMs / 2. */
const SWEEP_MS = outageNetwork.heartbeatTimeoutMs / 2

type User = Awaited<ReturnType<typeof signUp>>

const send = (server: TestServer, pb: User, model: string) =>
  sendInNewConversation(server, pb, { title: 'Lost cancel', model, prompt: 'Hello' })

async function cancel(server: TestServer, pb: User, requestId: string) {
  const res = await postJson(
    server,
    '/api/requests/cancel',
    { request_id: requestId },
    pb.authStore.token,
  )
  expect(res.status).toBe(200)
  expect((await requestRowOf(server, requestId)).status).toBe('cancelled')
}

const cancelled = (node: FakeNode, jobId: string) =>
  node.frames.some((f) => f.type === 'job_cancel' && f.job_id === jobId)

/** Drops every `job_cancel` `server` sends to another process's node (one lost message each);
 * answers the ids of the jobs whose cancel was dropped. */
function dropCancels(server: TestServer): string[] {
  const dropped: string[] = []
  const bus = server.core.bus
  const publish = bus.publish.bind(bus)
  bus.publish = (channel, message) => {
    const frame = (message as { kind?: string; frame?: ServerToNodeFrame }).frame
    const lost = (message as { kind?: string }).kind === 'to_node' && frame?.type === 'job_cancel'
    if (lost) dropped.push(frame.job_id)
    else publish(channel, message)
  }
  return dropped
}

describe.runIf(redisUrl && databaseUrl)('cancels lost on the way to a node [postgres]', () => {
  const coordinators = new TwoCoordinators()
  let redis: OwnRedis
  let a: TestServer
  let b: TestServer

  async function pair() {
    ;({ redis, a, b } = await coordinators.start({}, { network: outageNetwork }))
  }

  afterEach(() => coordinators.stop())

  it("a job_cancel lost while Redis is down: the node's process stops the job without the bus, and its slot serves the next request", async () => {
    await pair()
    const stories = await modelId(a)
    const { node } = await servingNode(a, stories, b) // its socket on B, the requests on A
    node.script = 'hang' // streams two chunks, then waits
    const pb = await signUp(a, 'lostcancel')
    const first = await send(a, pb, stories)
    await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node on B')
    const job = node.jobs[0].job_id
    expect(b.network.registry.relayedJobs).toBe(1)

    await redis.kill()
    await waitUntil(async () => (await redisState(a)) === 'offline', 10_000, 'health: Redis down')
    // The user stops the answer: A ends the request, and its job_cancel goes over the dead bus.
    await cancel(a, pb, first.request)
    // B reads the request's end in the database: the node stops within two sweeps, bus or none.
    await waitUntil(() => cancelled(node, job), 2 * SWEEP_MS + 1000, 'the orphan job stopped')
    expect(await redisState(b)).toBe('offline')
    expect(b.network.registry.relayedJobs).toBe(0)
    await redis.start()
    await waitUntil(async () => (await redisState(b)) === 'online', 10_000, 'health: Redis up')
    // A hears of the node again from B (its next announcement over the bus; on a busy machine
    // later than health says the bus is up: sent before, the request found no node).
    await waitUntil(() => a.network.registry.get(node.nodeId), 10_000, 'A knows the node again')
    // The slot is free: once the bus is back, the next request runs on the node.
    node.script = 'stream'
    const second = await send(a, pb, stories)
    const answered = await waitUntil(
      async () => {
        const row = await requestRowOf(a, second.request)
        return ['completed', 'failed'].includes(String(row.status)) && row
      },
      10_000,
      'next request answered by the node',
    )
    expect(answered).toMatchObject({
      status: 'completed',
      response: 'Once upon a time',
      reserved: 0,
    })
    expect(node.jobs.length).toBe(2)
    node.kill()
  }, 60_000)

  it('a job_cancel lost with the bus up: the sweep stops the job of a cancelled request, and of a deleted one', async () => {
    await pair()
    const stories = await modelId(a)
    const { node } = await servingNode(a, stories, b)
    node.script = 'hang'
    const pb = await signUp(a, 'dropped')
    const dropped = dropCancels(a)

    // Cancelled by its user: the request and its job row say so.
    const first = await send(a, pb, stories)
    await waitUntil(() => node.jobs.length === 1, 10_000, 'first job reached the node')
    const firstJob = node.jobs[0].job_id
    await cancel(a, pb, first.request)
    expect(dropped).toEqual([firstJob])
    await waitUntil(
      () => cancelled(node, firstJob),
      2 * SWEEP_MS + 1000,
      'the sweep stopped the first job',
    )
    expect(b.network.registry.relayedJobs).toBe(0)

    // Deleted with its conversation: its rows are gone.
    const second = await send(a, pb, stories)
    await waitUntil(() => node.jobs.length === 2, 10_000, 'second job reached the freed node')
    const secondJob = node.jobs[1].job_id
    await pb.collection('conversations').delete(second.conversation)
    await waitUntil(() => dropped.length === 2, 5000, "A's cancel of the deleted request")
    expect(dropped[1]).toBe(secondJob)
    await waitUntil(
      () => cancelled(node, secondJob),
      2 * SWEEP_MS + 1000,
      'the sweep stopped the second job',
    )
    expect(b.network.registry.relayedJobs).toBe(0)
    node.kill()
  }, 60_000)
})
