/**
 * The scaled-out configuration against real PostgreSQL and Redis: the Redis bus, the health
 * endpoint's real checks, a realtime event crossing from one coordinator process to another, and
 * chat requests handed off to a node whose socket is on the other process.
 * Runs when TEST_DATABASE_URL and TEST_REDIS_URL are set (CI sets both).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RedisBus } from '../src/tools/bus/redis-bus.ts'
import type { Redis } from 'ioredis'
import { MemoryBus } from '../src/tools/bus/memory-bus.ts'
import { modelId } from './fixtures.ts'
import { signUp, startPeerServer, startTestServer, type TestServer } from './harness.ts'
import { HostileNode, trickle } from './support/hostile-node.ts'
import { linkNode, postJson, serveModel, servingNode, waitUntil } from './support/network.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL

describe('embedded bus', () => {
  it('delivers to subscribers of the channel only, until they unsubscribe', async () => {
    const bus = new MemoryBus()
    const got: unknown[] = []
    const off = bus.subscribe('a', (m) => got.push(m))
    bus.subscribe('b', () => got.push('wrong channel'))
    bus.publish('a', { n: 1 })
    off()
    bus.publish('a', { n: 2 })
    expect(got).toEqual([{ n: 1 }])
    expect(await bus.ping()).toBe(true)
  })

  it('is what /api/system/health reports when Redis is not configured', async () => {
    const server = await startTestServer('sqlite')
    const health = await (await fetch(`${server.url}/api/system/health`)).json()
    // No Redis: the spec's boolean is false (no Redis answered) and the state says why.
    expect(health).toEqual({
      status: 'healthy',
      services: { database: true, redis: false },
      states: { database: 'online', redis: 'not_configured' },
      backends: { database: 'sqlite', redis: 'embedded' },
    })
    const pbHealth = await (await fetch(`${server.url}/api/health`)).json()
    expect(pbHealth).toEqual({ message: 'API is healthy.', code: 200, data: {} })
    await server.stop()
  })
})

describe.runIf(redisUrl)('Redis bus [redis]', () => {
  it('carries messages between two independent connections (two processes)', async () => {
    const prefix = `test${Date.now()}:`
    const a = new RedisBus(redisUrl!, prefix)
    const b = new RedisBus(redisUrl!, prefix)
    const got: unknown[] = []
    b.subscribe('records', (m) => got.push(m))
    // Publish once the subscription is live (a fixed pause was not always enough on a busy machine).
    await b.subscribed()
    a.publish('records', { hello: 'world' })
    const end = Date.now() + 2000
    while (got.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
    expect(got).toEqual([{ hello: 'world' }])
    expect(await a.ping()).toBe(true)
    await a.close()
    await b.close()
  })

  it('does not receive while its subscriber connection is away, until the bus has resumed', async () => {
    const bus = new RedisBus(redisUrl!, `test${Date.now()}:`)
    bus.subscribe('records', () => {})
    await bus.subscribed()
    await waitUntil(async () => bus.receiving() && (await bus.ping()), 5000, 'bus up')
    let resumed = false
    bus.onResumed(() => (resumed = true))
    const sub = (bus as unknown as { sub: Redis }).sub
    sub.stream.destroy() // the connection cut; ioredis connects again and subscribes again
    await waitUntil(() => sub.status !== 'ready', 5000, 'subscriber away')
    // What it publishes still gets out (a cancel for the process running a request).
    expect(await bus.ping()).toBe(true)
    const seen: Array<{ up: boolean; resumed: boolean }> = []
    await waitUntil(
      async () => {
        seen.push({ up: bus.receiving(), resumed })
        return seen.at(-1)!.up
      },
      10_000,
      'bus up again',
    )
    expect(seen[0]).toEqual({ up: false, resumed: false })
    expect(seen.filter((s) => s.up && !s.resumed)).toEqual([])
    await bus.close()
  })

  it('reports a Redis that cannot be reached as down', async () => {
    const bus = new RedisBus('redis://127.0.0.1:1')
    expect(await bus.ping()).toBe(false)
    await bus.close()
  })
})

describe.runIf(redisUrl && databaseUrl)('two coordinators on PostgreSQL + Redis [postgres]', () => {
  let a: TestServer
  let b: TestServer
  beforeAll(async () => {
    a = await startTestServer('postgres', { redisUrl })
    b = await startTestServer('postgres', {
      redisUrl,
      databaseSchema: a.core.config.databaseSchema,
      dataDir: a.core.config.dataDir,
    })
  })
  afterAll(async () => {
    await b.close()
    await a.stop()
  })

  it('reports both services from real checks', async () => {
    const health = await (await fetch(`${b.url}/api/system/health`)).json()
    expect(health).toEqual({
      status: 'healthy',
      services: { database: true, redis: true },
      states: { database: 'online', redis: 'online' },
      backends: { database: 'postgres', redis: 'redis' },
    })
  })

  it('delivers a record created through one process to a subscriber on the other', async () => {
    const writer = await signUp(a, 'scale')
    const reader = b.client()
    reader.authStore.save(writer.authStore.token, writer.authStore.record)
    const got: string[] = []
    await reader.collection('conversations').subscribe('*', (e) => got.push(e.record.title))
    await writer
      .collection('conversations')
      .create({ model: await modelId(a), title: 'crossed processes' })
    const end = Date.now() + 3000
    while (got.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
    expect(got).toEqual(['crossed processes'])
    await reader.realtime.unsubscribe()
  })
})

describe.runIf(redisUrl && databaseUrl)('job hand-off between two coordinators [postgres]', () => {
  let a: TestServer
  let b: TestServer
  let stories: string
  beforeAll(async () => {
    const network = { heartbeatTimeoutMs: 1500, scheduler: { stallMs: 1500, offerTimeoutMs: 1500 } }
    a = await startTestServer('postgres', { redisUrl }, { network })
    b = await startPeerServer(a, { redisUrl }, { network })
    stories = await modelId(a)
  })
  afterAll(async () => {
    await b.close()
    await a.stop()
  })

  /** A node linked through A whose socket is on B; the owner's serve request, made on A, must
   * reach it there. */
  const nodeOnB = () => servingNode(a, stories, b)

  const send = async (pb: Awaited<ReturnType<typeof signUp>>, prompt: string) => {
    const conversation = await pb.collection('conversations').create({ title: 'Across' })
    const sent = await postJson(
      a,
      '/api/chat/send',
      { conversation_id: conversation.id, model_id: stories, prompt },
      pb.authStore.token,
    )
    expect(sent.status).toBe(200)
    return sent.body.request_id as string
  }
  const finished = (pb: Awaited<ReturnType<typeof signUp>>, id: string) =>
    waitUntil(
      async () => {
        const r = await pb.collection('requests').getOne(id)
        return (r.status === 'completed' || r.status === 'failed') && r
      },
      10_000,
      'request finished',
    )

  it('answers a request sent to A with a node connected to B, paid once', async () => {
    const { owner, node } = await nodeOnB()
    const pb = await signUp(a, 'asker')
    // A hears of the node at its next hello or heartbeat (the fake node beats every 100 ms).
    const id = await send(pb, 'Tell me a story')
    const row = await finished(pb, id)
    expect(row).toMatchObject({
      status: 'completed',
      response: 'Once upon a time',
      node: node.nodeId,
    })
    expect(node.jobs).toHaveLength(1)
    const balance = await pb.collection('user_balances').getFirstListItem('')
    const expected = 1000 - (Math.floor('Tell me a story'.length / 4) + 4)
    expect(balance.balance).toBe(expected)
    const earned = await owner
      .collection('user_credit_txs')
      .getFullList({ filter: 'type = "credit_inference_request"' })
    expect(earned.map((t) => t.amount)).toEqual([Math.floor('Tell me a story'.length / 4) + 4])
    node.kill()
  })

  it('gives the job to another node when the node on B dies mid-answer', async () => {
    const first = await nodeOnB()
    first.node.script = 'hang'
    const pb = await signUp(a, 'survivor')
    const id = await send(pb, 'Hello there')
    await waitUntil(() => first.node.jobs.length === 1, 5000, 'job reached the node on B')
    // A second node, this one on A itself, then the first one's socket drops.
    const { node: second } = await servingNode(a, stories)
    second.chunks = ['Second', ' answer']
    first.node.kill()
    const row = await finished(pb, id)
    expect(row).toMatchObject({
      status: 'completed',
      response: 'Second answer',
      node: second.nodeId,
    })
    const charges = await pb
      .collection('user_credit_txs')
      .getFullList({ filter: 'type = "debit_inference_request"' })
    expect(charges).toHaveLength(1)
    second.kill()
  })

  it('stops a request running on A when its owner cancels it through B', async () => {
    const owner = await signUp(a, 'provider')
    const { nodeId, credential } = await linkNode(a, owner)
    const node = new HostileNode(b, nodeId, credential)
    await node.connect()
    await serveModel(a, owner, nodeId, stories)
    // Never silent long enough to stall, never done: only the cancel ends it.
    node.behaviour = trickle(50)
    try {
      const pb = await signUp(a, 'canceller')
      const prompt = 'Tell me a story'
      let seen: () => void = () => {}
      const streaming = new Promise<void>((r) => (seen = r))
      await pb.collection('requests').subscribe('*', (e) => {
        if (String(e.record.response).length >= 4) seen()
      })
      const id = await send(pb, prompt)
      const job = await node.firstJob()
      // A (which scheduled it) has counted some text before the cancel reaches B.
      await streaming
      await pb.collection('requests').unsubscribe()
      const stopped = await postJson(
        b,
        '/api/requests/cancel',
        { request_id: id },
        pb.authStore.token,
      )
      expect(stopped.status).toBe(200)
      const body = stopped.body as {
        status: string
        response: string
        tokens_output: number
        cost: number
      }
      expect(body.status).toBe('cancelled')
      expect(body.response).toMatch(/^a+$/)
      expect(body.tokens_output).toBe(Math.floor(body.response.length / 4))
      const cost = Math.floor(prompt.length / 4) + body.tokens_output
      expect(body.cost).toBe(cost)
      await waitUntil(() => node.cancelled(job), 5000, 'job_cancel reached the node on B')
      const balance = await pb.collection('user_balances').getFirstListItem('')
      expect(balance).toMatchObject({ balance: 1000 - cost, held: 0 })
      expect(await pb.collection('requests').getOne(id)).toMatchObject({
        status: 'cancelled',
        response: body.response,
      })
    } finally {
      node.kill()
    }
  })

  it('tells a coordinator that starts about the nodes already connected elsewhere', async () => {
    const { node } = await nodeOnB()
    node.silence() // no heartbeats from now on: only the start-up sync can tell C
    const c = await startTestServer('postgres', {
      redisUrl,
      databaseSchema: a.core.config.databaseSchema,
      dataDir: a.core.config.dataDir,
    })
    try {
      await waitUntil(() => c.network.registry.get(node.nodeId), 1000, 'C knows the node on B')
    } finally {
      node.kill()
      await c.close()
    }
  })

  it('forgets the nodes of a coordinator that vanished, and fails their job with can_retry, uncharged', async () => {
    const c = await startPeerServer(a, { redisUrl }, { network: { heartbeatTimeoutMs: 1500 } })
    const { node } = await servingNode(a, stories, c)
    node.script = 'hang'
    const pb = await signUp(a, 'stranded')
    const id = await send(pb, 'Anyone there?')
    await waitUntil(() => node.jobs.length === 1, 5000, 'job reached the node on C')
    // C stops without a word to the others (as a crashed process would: its bus goes first).
    node.silence()
    await c.core.bus.close()
    await c.close()
    const row = await finished(pb, id)
    expect(row).toMatchObject({ status: 'failed', can_retry: true })
    const balance = await pb.collection('user_balances').getFirstListItem('')
    expect(balance.balance).toBe(1000)
    expect(a.network.registry.get(node.nodeId)).toBeUndefined()
  })
})
