/**
 * The scaled-out configuration against real PostgreSQL and Redis: the Redis bus, the health
 * endpoint's real checks, and a realtime event crossing from one coordinator process to another.
 * Runs when TEST_DATABASE_URL and TEST_REDIS_URL are set (CI sets both).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RedisBus } from '../src/tools/bus/redis-bus.ts'
import { MemoryBus } from '../src/tools/bus/memory-bus.ts'
import { modelId } from './fixtures.ts'
import { signUp, startTestServer, type TestServer } from './harness.ts'

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
    expect(health).toEqual({ status: 'healthy', services: { database: true, redis: true }, backends: { database: 'sqlite', redis: 'embedded' } })
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
    await new Promise((r) => setTimeout(r, 100))
    a.publish('records', { hello: 'world' })
    const end = Date.now() + 2000
    while (got.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
    expect(got).toEqual([{ hello: 'world' }])
    expect(await a.ping()).toBe(true)
    await a.close()
    await b.close()
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
    b = await startTestServer('postgres', { redisUrl, databaseSchema: a.core.config.databaseSchema, dataDir: a.core.config.dataDir })
  })
  afterAll(async () => {
    await b.close()
    await a.stop()
  })

  it('reports both services from real checks', async () => {
    const health = await (await fetch(`${b.url}/api/system/health`)).json()
    expect(health).toEqual({ status: 'healthy', services: { database: true, redis: true }, backends: { database: 'postgres', redis: 'redis' } })
  })

  it('delivers a record created through one process to a subscriber on the other', async () => {
    const writer = await signUp(a, 'scale')
    const reader = b.client()
    reader.authStore.save(writer.authStore.token, writer.authStore.record)
    const got: string[] = []
    await reader.collection('conversations').subscribe('*', (e) => got.push(e.record.title))
    await writer.collection('conversations').create({ model: await modelId(a), title: 'crossed processes' })
    const end = Date.now() + 3000
    while (got.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
    expect(got).toEqual(['crossed processes'])
    reader.realtime.unsubscribe()
  })
})
