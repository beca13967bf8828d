/**
 * Honest health: /api/health answers PocketBase's shape, 503 when the process cannot serve (its
 * database is unreachable) and 200 naming the outage when only Redis is (every process shares it:
 * a 503 would take them all out of a balancer at once); /api/system/health says which service is
 * down. Access is cut for real: the coordinator reaches
 * Redis and PostgreSQL through a TCP forwarder the test closes (every open connection dropped),
 * then restores; the process recovers on its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './harness.ts'
import { waitUntil } from './support/network.ts'
import { startTcpCut, type TcpCut } from './support/tcp-cut.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL

async function health(server: TestServer) {
  const res = await fetch(`${server.url}/api/health`)
  return { status: res.status, body: await res.json() }
}

async function systemHealth(server: TestServer) {
  return (await fetch(`${server.url}/api/system/health`)).json()
}

const healthy = { status: 200, body: { message: 'API is healthy.', code: 200, data: {} } }

describe('health on the embedded default', () => {
  it('is 200 in PocketBase shape with SQLite and no Redis', async () => {
    const server = await startTestServer('sqlite')
    try {
      expect(await health(server)).toEqual(healthy)
    } finally {
      await server.stop()
    }
  })
})

describe.runIf(redisUrl)('health when Redis goes away [redis]', () => {
  let cut: TcpCut
  let server: TestServer
  beforeAll(async () => {
    const target = new URL(redisUrl!)
    cut = await startTcpCut(target.hostname, Number(target.port || 6379))
    server = await startTestServer('sqlite', { redisUrl: cut.through(redisUrl!) })
  })
  afterAll(async () => {
    await server.stop()
    await cut.close().catch(() => {})
  })

  it('stays in service while Redis cannot be reached, says so, and recovers when it is back', async () => {
    expect(await health(server)).toEqual(healthy)
    await cut.cut()
    const down = await waitUntil(
      async () => {
        const h = await health(server)
        return h.body.code === 200 && h.body.message !== 'API is healthy.' && h
      },
      15_000,
      'degraded',
    )
    expect(down).toEqual({
      status: 200,
      body: {
        message: 'API is healthy, degraded: Redis cannot be reached.',
        code: 200,
        data: { degraded: ['redis'] },
      },
    })
    // What it still serves without Redis: records.
    expect((await fetch(`${server.url}/api/collections/models/records`)).status).toBe(200)
    expect(await systemHealth(server)).toMatchObject({
      status: 'degraded',
      services: { database: true, redis: false },
    })
    // A realtime stream cannot be registered without Redis: a 503 to retry, and the process
    // goes on (the failure is caught, not an unhandled rejection).
    const stream = await fetch(`${server.url}/api/realtime`)
    expect(stream.status).toBe(503)
    expect(await stream.json()).toEqual({
      data: {},
      message: 'Realtime is unavailable, try again.',
      status: 503,
    })
    await cut.restore()
    await waitUntil(
      async () => (await health(server)).body.message === 'API is healthy.',
      30_000,
      'healthy again',
    )
    expect(await systemHealth(server)).toMatchObject({
      status: 'healthy',
      services: { database: true, redis: true },
    })
    const again = new AbortController()
    const reopened = await fetch(`${server.url}/api/realtime`, { signal: again.signal })
    expect(reopened.status).toBe(200)
    again.abort()
  })
})

describe.runIf(databaseUrl)('health when PostgreSQL goes away [postgres]', () => {
  let cut: TcpCut
  let server: TestServer
  beforeAll(async () => {
    const target = new URL(databaseUrl!)
    cut = await startTcpCut(target.hostname, Number(target.port || 5432))
    server = await startTestServer('postgres', { databaseUrl: cut.through(databaseUrl!) })
  })
  afterAll(async () => {
    await cut.restore().catch(() => {})
    await server.stop()
    await cut.close().catch(() => {})
  })

  it('answers 503 while the database cannot be reached, keeps running, and recovers when it is back', async () => {
    expect(await health(server)).toEqual(healthy)
    await cut.cut()
    const down = await waitUntil(
      async () => {
        const h = await health(server)
        return h.status === 503 && h
      },
      15_000,
      '503',
    )
    expect(down.body).toEqual({
      message: 'API is not healthy: the database cannot be reached.',
      code: 503,
      data: {},
    })
    expect(await systemHealth(server)).toMatchObject({
      status: 'degraded',
      services: { database: false },
    })
    // Requests that need the database fail with 503 in PocketBase's shape; the process stays up.
    const list = await fetch(`${server.url}/api/collections/models/records`)
    expect(list.status).toBe(503)
    expect(await list.json()).toEqual({
      status: 503,
      message: 'The service is temporarily unavailable.',
      data: {},
    })
    await cut.restore()
    await waitUntil(
      async () => (await health(server)).body.message === 'API is healthy.',
      30_000,
      'healthy again',
    )
    expect(await systemHealth(server)).toMatchObject({
      status: 'healthy',
      services: { database: true },
    })
  })
})
