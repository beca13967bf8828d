/**
 * A Redis that stops answering, scaled out (two coordinators on PostgreSQL sharing a Redis of the
 * suite's own, `support/own-redis.ts`), from the outside: frozen with SIGSTOP, its connections stay
 * open and nothing is answered, as in a network partition, so nothing tells a client it is gone.
 * The promise (docs/scaling-out.md, docs/threat-model.md): every user-facing request answers
 * within a bound, with its usual answer or a clear 4xx/503 in PocketBase's shape, never a 500 and
 * never a wait for the thaw; a chat whose node is on its user's process needs no Redis and is paid
 * once; graceful shutdown ends; a freeze longer than a lease makes nobody take a live process's
 * requests over; thawed, everything works again, nothing is left open with its hold and nothing
 * went unhandled. Each case either pins a bug it found (it failed before its fix) or shows
 * behaviour that was already right. Runs when TEST_DATABASE_URL and TEST_REDIS_URL are set.
 */
import type PocketBase from 'pocketbase'
import { afterEach, describe, expect, it } from 'vitest'
import { SHUT_DOWN_MESSAGE } from '../../src/core/scheduler/takeover.ts'
import { modelId } from '../fixtures.ts'
import { signUp, type TestServer } from '../harness.ts'
import { balanceOf, expectAuditPasses, txsOf } from '../support/ledger.ts'
import {
  FakeNode,
  linkNode,
  requestEnded,
  requestRowOf,
  sendChat,
  servingNode,
  waitUntil,
} from '../support/network.ts'
import type { OwnRedis } from '../support/own-redis.ts'
import { openStream } from '../support/sse.ts'
import { outageNetwork, TwoCoordinators } from '../support/two-coordinators.ts'
import { unhandledDuringSuite } from '../support/unhandled.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL
if (!redisUrl || !databaseUrl)
  console.log('sweep-frozen-redis.test.ts: skipped (set TEST_DATABASE_URL and TEST_REDIS_URL)')

/** Every answer comes within this while Redis is frozen (health's own checks give up at 2 s). */
const WITHIN_MS = 3000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `run`'s result, failing the test when it took longer than `limitMs` (or never came). */
async function within<T>(what: string, run: () => Promise<T>, limitMs = WITHIN_MS): Promise<T> {
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  const never = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer at all`)), limitMs * 3)
  })
  try {
    return await Promise.race([run(), never])
  } finally {
    clearTimeout(timer)
    expect(performance.now() - started, `${what} took too long`).toBeLessThan(limitMs)
  }
}

/** A JSON request (POST with a body, GET without) answered within the bound, with `status`. */
async function call(
  what: string,
  server: TestServer,
  path: string,
  { body, token, status = 200 }: { body?: unknown; token?: string; status?: number } = {},
) {
  const res = await within(what, () =>
    fetch(new URL(path, server.url), {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  )
  const answer = (await res.json()) as Record<string, unknown>
  expect(res.status, `${what}: ${JSON.stringify(answer)}`).toBe(status)
  return answer
}

const redisState = async (server: TestServer) =>
  ((await call('system health', server, '/api/system/health')).states as { redis: string }).redis

describe.runIf(redisUrl && databaseUrl)('Redis frozen, two coordinators [postgres]', () => {
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

  /** Both processes see Redis again. */
  const thawed = () =>
    waitUntil(
      async () => (await redisState(a)) === 'online' && (await redisState(b)) === 'online',
      15_000,
      'Redis answers again',
    )

  /** The request was charged exactly once (one debit), nothing left held for it. */
  async function paidOnce(server: TestServer, pb: PocketBase, id: string) {
    const row = await requestEnded(server, id)
    expect(row).toMatchObject({ status: 'completed', reserved: 0 })
    const debits = (await txsOf(server, pb.authStore.record!.id)).filter(
      (t) => t.type === 'debit_inference_request' && t.request === id,
    )
    expect(debits.length).toBe(1)
  }

  const chat = async (pb: PocketBase) =>
    (await pb.collection('conversations').create({ title: 'Frozen' })).id

  /** On A: a node whose one job hangs, a request running on it and one queued behind. */
  async function runningAndQueued() {
    await pair()
    const model = await modelId(a)
    const { node } = await servingNode(a, model)
    node.script = 'hang'
    const pb = await signUp(a, 'user')
    const running = await sendChat(a, pb, { conversation: await chat(pb), model, prompt: 'Hi' })
    await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node')
    const queued = await sendChat(a, pb, { conversation: await chat(pb), model, prompt: 'Hi' })
    return { model, node, pb, running, queued }
  }

  it("every user-facing request answers within 3 s while Redis is frozen, never 500; a chat on its node's process completes, paid once; thawed, everything works again", async () => {
    await pair()
    const model = await modelId(a)
    const { owner, node: busy } = await servingNode(a, model) // sockets on A
    const pb = await signUp(a, 'frozen')
    const token = pb.authStore.token
    const key = (await call('api key', a, '/api/keys', { body: { name: 'script' }, token }))
      .key as string
    // A failed request to retry, and a running one (on A, its node kept busy) to cancel from B.
    busy.script = 'fail'
    const failed = await sendChat(a, pb, { conversation: await chat(pb), model, prompt: 'Hi' })
    expect(await requestEnded(a, failed)).toMatchObject({ status: 'failed', can_retry: 1 })
    busy.script = 'hang'
    const held = await sendChat(a, pb, { conversation: await chat(pb), model, prompt: 'Hi' })
    await waitUntil(() => busy.jobs.length === 2, 10_000, 'the held job reached its node')
    const { node } = await servingNode(a, model) // serves everything else
    const conversation = await chat(pb)

    redis.pause()
    // Health names the outage (database up: 200); the Network screen says which service is down.
    expect(await call('health', a, '/api/health')).toMatchObject({
      message: 'API is healthy, degraded: Redis cannot be reached.',
    })
    expect(await redisState(b)).toBe('offline')
    // Accounts and records (the SDK, as the web app).
    const other = await within('sign-up', () => signUp(b, 'during'))
    await within('sign-in', () =>
      b.client().collection('users').authWithPassword(other.authStore.record!.email, 'password123'),
    )
    const conversations = pb.collection('conversations')
    const made = await within('create', () => conversations.create({ title: 'x' }))
    await within('list', () => conversations.getList())
    await within('view', () => conversations.getOne(made.id))
    await within('update', () => conversations.update(made.id, { title: 'y' }))
    await within('delete', () => conversations.delete(made.id))
    // A chat whose node is on the same process needs no Redis: it is answered and paid once.
    const send = { conversation_id: conversation, model_id: model, prompt: 'Hi' }
    const local = (await call('send, node here', a, '/api/chat/send', { body: send, token }))
      .request_id as string
    await within('the local answer', () => paidOnce(a, pb, local), 5000)
    // Its node on the other process: accepted at once (the relay waits for the bus).
    const remote = (await call('send, node there', b, '/api/chat/send', { body: send, token }))
      .request_id as string
    await call('retry', a, '/api/requests/retry', { body: { request_id: failed }, token })
    const cancel = { body: { request_id: held }, token }
    expect(await call('cancel', b, '/api/requests/cancel', cancel)).toMatchObject({
      status: 'cancelled',
    })
    const v1 = { model: 'stories260K', messages: [{ role: 'user', content: 'Hi' }] }
    const completion = await within('/v1', async () => {
      const res = await fetch(`${a.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(v1),
      })
      return { status: res.status, body: await res.json() }
    })
    expect(completion).toMatchObject({ status: 200, body: { object: 'chat.completion' } })
    await call('link flow', a, '/api/auth/start-flow', { body: { device_name: 'Laptop' } })
    // A node links, connects to B and says hello: it gets its desired state from the database.
    const linked = await within('linking a node', () => linkNode(b, owner, 'During'))
    const late = new FakeNode(b, linked.nodeId, linked.credential)
    expect(await within('node connect', () => late.connect())).toBe('open')
    await within('node hello', () => waitUntil(() => late.frames.length > 0, WITHIN_MS * 2))
    expect(late.frames[0].type).toBe('desired_state')

    redis.resume()
    busy.script = 'stream' // its held job is cancelled at the thaw, and it serves again
    await thawed()
    // The request sent through B ends (answered, or failed retryable when its offer was lost).
    expect(['completed', 'failed']).toContain((await requestEnded(b, remote, 30_000)).status)
    for (const server of [a, b]) {
      const id = await sendChat(server, pb, { conversation, model, prompt: 'Again' })
      await paidOnce(server, pb, id)
      await (await openStream(server.url)).close()
    }
    await waitUntil(
      async () => Number((await balanceOf(a, pb.authStore.record!.id)).held) === 0,
      15_000,
      'no credits held',
    )
    await expectAuditPasses(a)
    late.kill()
    node.kill()
    busy.kill()
  }, 90_000)

  it("a freeze longer than the lease TTL: at the thaw nobody takes a live process's requests over, each runs and is paid once", async () => {
    const { node, pb, running, queued } = await runningAndQueued()

    redis.pause()
    await sleep(2 * outageNetwork.leaseTtlMs + 500) // every lease has lapsed inside the frozen Redis
    redis.resume()
    await thawed()
    await sleep(2 * outageNetwork.leaseTtlMs) // B looks every 100 ms

    expect(await requestRowOf(a, running)).toMatchObject({
      status: 'processing',
      lease_owner: a.core.processId,
    })
    expect(await requestRowOf(a, queued)).toMatchObject({
      status: 'pending',
      lease_owner: a.core.processId,
    })
    node.script = 'stream'
    node.send({
      type: 'job_done',
      job_id: node.jobs[0].job_id,
      tokens_input: 1,
      tokens_output: 2,
      processing_time_ms: 42,
    })
    for (const id of [running, queued]) await paidOnce(a, pb, id)
    expect(node.jobs.length).toBe(2) // nothing ran twice
    expect(node.frames.filter((f) => f.type === 'job_cancel')).toEqual([])
    await expectAuditPasses(a)
    node.kill()
  }, 60_000)

  it('graceful shutdown while Redis is frozen ends within its deadline and a bound: the queue fails retryable, uncharged; thawed, the other process serves', async () => {
    const { model, node, pb, running, queued } = await runningAndQueued()

    redis.pause()
    const deadlineMs = 500
    await within(
      'drain and close',
      () => a.drain(deadlineMs).then(() => a.close()),
      deadlineMs + WITHIN_MS,
    )
    // Nobody can tell whether another process lives: what was queued fails retryable.
    expect(await requestEnded(b, queued)).toMatchObject({
      status: 'failed',
      can_retry: 1,
      reserved: 0,
      error_message: SHUT_DOWN_MESSAGE,
    })
    expect(await requestEnded(b, running)).toMatchObject({
      status: 'failed',
      can_retry: 1,
      reserved: 0,
    })

    redis.resume()
    await waitUntil(async () => (await redisState(b)) === 'online', 15_000, 'Redis answers again')
    const { node: next } = await servingNode(b, model)
    const onB = b.client() // A is gone: the same user, signed in, through B
    onB.authStore.save(pb.authStore.token, pb.authStore.record)
    const again = await sendChat(b, onB, { conversation: await chat(onB), model, prompt: 'Hi' })
    await paidOnce(b, onB, again)
    await expectAuditPasses(b)
    next.kill()
    node.kill()
  }, 60_000)
})
