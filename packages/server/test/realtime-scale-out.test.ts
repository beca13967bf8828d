/**
 * Realtime across coordinator processes on PostgreSQL + Redis, as a round-robin balancer with
 * nothing sticky would split a client's calls: the stream on one process, its subscription POSTs
 * on another, with PocketBase's answers (204, 403, 404, 429) coming back from the stream's
 * process; stream limits counted across processes; a stream whose process died is 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from './fixtures.ts'
import { signUp, startTestServer, type TestServer } from './harness.ts'
import { waitUntil } from './support/network.ts'
import { filtered, openStream, postSubscriptions, type RawStream } from './support/sse.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL

describe.runIf(redisUrl && databaseUrl)('realtime across two coordinators [postgres]', () => {
  let a: TestServer
  let b: TestServer
  const streams: RawStream[] = []
  const open = async (server: TestServer) => {
    const s = await openStream(server.url)
    streams.push(s)
    return s
  }
  beforeAll(async () => {
    const realtimeLimits = {
      subscriptionsPerClient: 10,
      connectionsPerUser: 2,
      connectionsPerAddress: 3,
    }
    a = await startTestServer('postgres', { redisUrl, realtimeLimits })
    const shared = { databaseSchema: a.core.config.databaseSchema, dataDir: a.core.config.dataDir }
    b = await startTestServer('postgres', { redisUrl, realtimeLimits, ...shared })
  })
  afterAll(async () => {
    await Promise.all(streams.map((s) => s.close()))
    await b.close()
    await a.stop()
  })

  it("takes a stream's subscriptions on the other process, and answers as the stream's process would", async () => {
    const alice = await signUp(a, 'across')
    const bob = await signUp(b, 'other')
    const stream = await open(a)
    const key = filtered('conversations/*', 'title ~ "across"')
    expect(await postSubscriptions(b.url, stream.clientId, [key], alice.authStore.token)).toEqual({
      status: 204,
      body: null,
    })
    await alice
      .collection('conversations')
      .create({ model: await modelId(a), title: 'across processes' })
    await alice
      .collection('conversations')
      .create({ model: await modelId(a), title: 'filtered out' })
    const [event] = await stream.waitFor(1)
    expect(event).toMatchObject({
      event: key,
      data: { action: 'create', record: { title: 'across processes' } },
    })
    // Bob may not take alice's stream, whichever process he asks.
    expect(
      await postSubscriptions(b.url, stream.clientId, ['conversations/*'], bob.authStore.token),
    ).toEqual({
      status: 403,
      body: {
        status: 403,
        message: "The current and the previous request authorization don't match.",
        data: {},
      },
    })
    expect(await postSubscriptions(b.url, 'no-such-client', [])).toEqual({
      status: 404,
      body: { status: 404, message: 'Missing or invalid client id.', data: {} },
    })
    const tooMany = Array.from({ length: 11 }, (_, i) => `conversations/${i}`)
    expect(
      (await postSubscriptions(b.url, stream.clientId, tooMany, alice.authStore.token)).status,
    ).toBe(429)
    expect(stream.events).toHaveLength(1)
    await stream.close()
  })

  it('counts streams per address and per user over both processes', async () => {
    const carol = await signUp(a, 'counted')
    // The previous test's streams have left the shared directory.
    await waitUntil(
      async () => (await a.core.redis!.keys('realtime:client:*')).length === 0,
      5000,
      'no streams left',
    )
    const onA = await open(a)
    const onB = await open(b)
    const third = await open(a)
    const refused = await openStream(b.url).catch((err: { status: number }) => err.status)
    expect(refused).toBe(429)
    const token = carol.authStore.token
    expect((await postSubscriptions(b.url, onA.clientId, ['conversations/*'], token)).status).toBe(
      204,
    )
    expect((await postSubscriptions(a.url, onB.clientId, ['conversations/*'], token)).status).toBe(
      204,
    )
    expect(
      (await postSubscriptions(a.url, third.clientId, ['conversations/*'], token)).status,
    ).toBe(429)
    await Promise.all([onA, onB, third].map((s) => s.close()))
  })

  it('answers 404 for a stream whose process died, after asking it', async () => {
    const c = await startTestServer('postgres', {
      redisUrl,
      databaseSchema: a.core.config.databaseSchema,
      dataDir: a.core.config.dataDir,
    })
    const orphan = await openStream(c.url)
    // C dies without a word: its bus goes first, so its directory entries stay behind (leases).
    await c.core.bus.close()
    await c.close()
    await orphan.close()
    expect((await postSubscriptions(a.url, orphan.clientId, ['models/*'])).status).toBe(404)
  }, 20_000)
})
