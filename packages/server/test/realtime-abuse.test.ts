/**
 * Realtime under abuse, from the outside (raw SSE streams and POSTs, as an attacker would send
 * them): subscriptions per stream, streams per address and per user (429 in PocketBase's error
 * shape), and one user's thousands of filters paid from that user's own budget while another
 * user's events all arrive. Work is counted through /api/metrics (checks made in memory and in
 * the database), not timed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { waitUntil } from './support/network.ts'
import { filtered, openStream, postSubscriptions, type RawStream } from './support/sse.ts'

const metricsToken = 'realtime-metrics-token-0123'

async function counters(server: TestServer) {
  const text = await (
    await fetch(`${server.url}/api/metrics`, {
      headers: { Authorization: `Bearer ${metricsToken}` },
    })
  ).text()
  const value = (line: string) =>
    Number(
      text
        .split('\n')
        .find((l) => l.startsWith(`${line} `))
        ?.split(' ')
        .pop() ?? NaN,
    )
  return {
    memory: value('meshwork_realtime_checks_total{where="memory"}'),
    database: value('meshwork_realtime_checks_total{where="database"}'),
    dropped: value('meshwork_realtime_dropped_events_total'),
  }
}

describe.each(dialects)('realtime limits [%s]', (dialect) => {
  let server: TestServer
  const streams: RawStream[] = []
  const open = async () => {
    const s = await openStream(server.url)
    streams.push(s)
    return s
  }
  beforeAll(async () => {
    server = await startTestServer(dialect, {
      realtimeLimits: {
        subscriptionsPerClient: 5,
        connectionsPerUser: 2,
        connectionsPerAddress: 4,
      },
    })
  })
  afterAll(async () => {
    await Promise.all(streams.map((s) => s.close()))
    await server.stop()
  })

  it('takes at most the limit of subscriptions per stream and refuses more with 429', async () => {
    const stream = await open()
    const keys = [
      'conversations/*',
      'models/*',
      'nodes/*',
      'requests/*',
      'user_balances/*',
      'node_models/*',
    ]
    const refused = await postSubscriptions(server.url, stream.clientId, keys)
    expect(refused).toEqual({
      status: 429,
      body: {
        status: 429,
        message: 'A realtime client may hold at most 5 subscriptions.',
        data: {},
      },
    })
    // Duplicates and empty keys are not subscriptions of their own.
    const taken = await postSubscriptions(server.url, stream.clientId, [
      ...keys.slice(0, 5),
      keys[0],
      '',
    ])
    expect(taken.status).toBe(204)
    await stream.close()
  })

  it('limits streams per address; a closed stream frees its place', async () => {
    await waitUntil(() => server.hub.size === 0, 5000, 'earlier streams gone')
    const held = await Promise.all([open(), open(), open(), open()])
    const refused = await openStream(server.url).then(
      () => ({ status: 200, body: null }),
      (err: { status: number; body: unknown }) => ({ status: err.status, body: err.body }),
    )
    expect(refused).toEqual({
      status: 429,
      body: { status: 429, message: 'Too many realtime connections from this address.', data: {} },
    })
    await held[0].close()
    const again = await waitUntil(
      () => openStream(server.url).catch(() => null),
      5000,
      'a place after closing one',
    )
    streams.push(again)
    await Promise.all([...held.slice(1), again].map((s) => s.close()))
  })

  it('limits streams per user; guests and the user’s other streams go on', async () => {
    await waitUntil(() => server.hub.size === 0, 5000, 'earlier streams gone')
    const alice = await signUp(server, 'limited')
    const token = alice.authStore.token
    const [first, second, third] = await Promise.all([open(), open(), open()])
    expect(
      (await postSubscriptions(server.url, first.clientId, ['conversations/*'], token)).status,
    ).toBe(204)
    expect(
      (await postSubscriptions(server.url, second.clientId, ['conversations/*'], token)).status,
    ).toBe(204)
    expect(await postSubscriptions(server.url, third.clientId, ['conversations/*'], token)).toEqual(
      {
        status: 429,
        body: { status: 429, message: 'Too many realtime connections for this user.', data: {} },
      },
    )
    // The same stream as a guest is fine (it sees nothing of alice's).
    expect((await postSubscriptions(server.url, third.clientId, ['models/*'])).status).toBe(204)
    // A stream of alice's re-posting its subscriptions is not a new stream.
    expect(
      (await postSubscriptions(server.url, first.clientId, ['conversations/*'], token)).status,
    ).toBe(204)
    await alice
      .collection('conversations')
      .create({ model: await modelId(server), title: 'still here' })
    expect((await first.waitFor(1))[0].data).toMatchObject({
      action: 'create',
      record: { title: 'still here' },
    })
    expect((await second.waitFor(1))[0].data).toMatchObject({
      action: 'create',
      record: { title: 'still here' },
    })
    await Promise.all([first, second, third].map((s) => s.close()))
  })
})

describe.each(dialects)('realtime cost [%s]', (dialect) => {
  let server: TestServer
  let model: string
  beforeAll(async () => {
    server = await startTestServer(dialect, {
      metricsToken,
      realtimeLimits: {
        subscriptionsPerClient: 200,
        connectionsPerUser: 20,
        connectionsPerAddress: 0,
      },
    })
    model = await modelId(server)
  })
  afterAll(() => server.stop())

  it('looks only at the subscriptions whose required field value the record has', async () => {
    const pb = await signUp(server, 'indexed')
    const stream = await openStream(server.url)
    const keys = Array.from({ length: 200 }, (_, i) =>
      filtered('conversations/*', `title = "t${i}" && message_count >= 0`),
    )
    expect(
      (await postSubscriptions(server.url, stream.clientId, keys, pb.authStore.token)).status,
    ).toBe(204)
    const before = await counters(server)
    for (let i = 0; i < 20; i++)
      await pb.collection('conversations').create({ model, title: `t${i * 7}` })
    const events = await stream.waitFor(20)
    expect(events.map((e) => e.event)).toEqual(Array.from({ length: 20 }, (_, i) => keys[i * 7]))
    const after = await counters(server)
    // Per event: the list rule, the one filter that can match, the owner rule. Scanning every
    // subscription would have made 200 filter checks per event.
    expect(after.memory - before.memory).toBeLessThanOrEqual(20 * 3)
    expect(after.database - before.database).toBe(0)
    await stream.close()
  })

  it("visits only the streams an event could concern: another user's own-records subscription is not checked", async () => {
    const users = await Promise.all(Array.from({ length: 8 }, (_, i) => signUp(server, `own${i}`)))
    const watching: RawStream[] = []
    for (const pb of users) {
      const stream = await openStream(server.url)
      watching.push(stream)
      expect(
        (
          await postSubscriptions(
            server.url,
            stream.clientId,
            ['conversations/*'],
            pb.authStore.token,
          )
        ).status,
      ).toBe(204)
    }
    const before = await counters(server)
    for (let i = 0; i < 5; i++)
      await users[0].collection('conversations').create({ model, title: `own ${i}` })
    const events = await watching[0].waitFor(5)
    expect(events.map((e) => (e.data.record as { title: string }).title)).toEqual(
      [0, 1, 2, 3, 4].map((i) => `own ${i}`),
    )
    // Every other user's stream would have cost its list-rule check per event (8 streams: 40+).
    const after = await counters(server)
    expect(after.memory - before.memory).toBeLessThanOrEqual(5 * 2)
    // A later event of another user still reaches that user: nothing was lost on the way.
    await users[3].collection('conversations').create({ model, title: 'theirs' })
    expect(((await watching[3].waitFor(1))[0].data.record as { title: string }).title).toBe(
      'theirs',
    )
    for (const stream of [watching[1], watching[2], ...watching.slice(4)])
      expect(stream.events).toHaveLength(0)
    for (const stream of watching) await stream.close()
  })

  it("shares one user's identical subscriptions across streams, and a stream that leaves or changes them affects no other", async () => {
    const pb = await signUp(server, 'shared')
    const other = await signUp(server, 'shared-other')
    const streams: RawStream[] = []
    for (let i = 0; i < 12; i++) {
      const stream = await openStream(server.url)
      streams.push(stream)
      expect(
        (
          await postSubscriptions(
            server.url,
            stream.clientId,
            ['conversations/*'],
            (i < 10 ? pb : other).authStore.token,
          )
        ).status,
      ).toBe(204)
    }
    await pb.collection('conversations').create({ model, title: 'to all ten' })
    for (const stream of streams.slice(0, 10)) {
      expect((await stream.waitFor(1)).map((e) => e.event)).toEqual(['conversations/*'])
    }
    // Three leave, two narrow their subscription with a filter: the rest still share one view.
    for (const stream of streams.slice(0, 3)) await stream.close()
    for (const stream of streams.slice(3, 5)) {
      const key = filtered('conversations/*', 'title = "narrow"')
      expect(
        (await postSubscriptions(server.url, stream.clientId, [key], pb.authStore.token)).status,
      ).toBe(204)
    }
    await pb.collection('conversations').create({ model, title: 'wide' })
    await pb.collection('conversations').create({ model, title: 'narrow' })
    for (const stream of streams.slice(5, 10)) {
      const events = await stream.waitFor(3)
      expect(events.map((e) => (e.data.record as { title: string }).title)).toEqual([
        'to all ten',
        'wide',
        'narrow',
      ])
    }
    for (const stream of streams.slice(3, 5)) {
      const events = await stream.waitFor(2)
      expect(events.map((e) => (e.data.record as { title: string }).title)).toEqual([
        'to all ten',
        'narrow',
      ])
    }
    // The other user's streams, with the same key, saw none of it (the list rule, per caller).
    await new Promise((r) => setTimeout(r, 150))
    for (const stream of streams.slice(10)) expect(stream.events).toHaveLength(0)
    await Promise.all(streams.slice(3).map((s) => s.close()))
  })

  it("pays one user's thousand filters from that user's budget; another user's events all arrive", async () => {
    const hostile = await signUp(server, 'hostile')
    const normal = await signUp(server, 'normal')
    const watcher = await openStream(server.url)
    expect(
      (
        await postSubscriptions(
          server.url,
          watcher.clientId,
          ['conversations/*'],
          normal.authStore.token,
        )
      ).status,
    ).toBe(204)
    // Filters through relations need the database for each of the hostile user's own records.
    const attackers: RawStream[] = []
    for (let s = 0; s < 5; s++) {
      const stream = await openStream(server.url)
      attackers.push(stream)
      const keys = Array.from({ length: 200 }, (_, i) =>
        filtered('conversations/*', `model.name ~ "${s}x${i}" || user.email ~ "${s}x${i}"`),
      )
      expect(
        (await postSubscriptions(server.url, stream.clientId, keys, hostile.authStore.token))
          .status,
      ).toBe(204)
    }
    const before = await counters(server)
    const started = performance.now()
    for (let i = 0; i < 30; i++) {
      await hostile.collection('conversations').create({ model, title: `noise ${i}` })
      await normal.collection('conversations').create({ model, title: `mine ${i}` })
    }
    const events = await watcher.waitFor(30, 15_000)
    expect(events.map((e) => e.data.record && (e.data.record as { title: string }).title)).toEqual(
      Array.from({ length: 30 }, (_, i) => `mine ${i}`),
    )
    // Let the hostile streams' queues run dry, then count what they were allowed to cost.
    await waitUntil(
      async () => {
        const a = await counters(server)
        await new Promise((r) => setTimeout(r, 200))
        const b = await counters(server)
        return a.database === b.database && b
      },
      15_000,
      'the hostile queues to settle',
    )
    const seconds = (performance.now() - started) / 1000
    const after = await counters(server)
    const queries = after.database - before.database
    // Budget: 250 ms at once plus 50 ms per second, a query counting 1 ms; each stream may
    // overdraw by its last query. Without it: 30 events x 1,000 filters = 30,000 queries.
    expect(queries).toBeGreaterThan(0)
    expect(queries).toBeLessThanOrEqual(250 + 50 * seconds + 5)
    expect(after.dropped - before.dropped).toBeGreaterThan(0)
    await Promise.all([watcher, ...attackers].map((s) => s.close()))
  }, 60_000)
})
