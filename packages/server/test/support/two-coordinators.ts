/**
 * @module Scaled out for the outage suites: two coordinators on PostgreSQL (one schema, one data
 * folder) sharing a Redis of their own (`own-redis.ts`) that a case kills, restarts or freezes;
 * the network timings those suites run on; and what a process's health says of Redis.
 */
import type { Config } from '../../src/config.ts'
import type { ServerExtras } from '../../src/server.ts'
import { startPeerServer, startTestServer, type TestServer } from '../harness.ts'
import { freePort } from './cluster.ts'
import { OwnRedis } from './own-redis.ts'

/**
 * Network timings for two coordinators whose Redis goes away: a lease lapses 1.5 s after its last
 * renewal and the survivor looks for lapsed ones every 100 ms, while no answer stalls and no offer
 * times out within a case.
 */
export const outageNetwork = {
  heartbeatTimeoutMs: 3000,
  leaseTtlMs: 1500,
  takeoverIntervalMs: 100,
  scheduler: { stallMs: 30_000, offerTimeoutMs: 10_000 },
}

/** Redis as `server`'s health sees it: 'online' or 'offline'. */
export async function redisState(server: TestServer): Promise<string> {
  const res = await fetch(`${server.url}/api/system/health`)
  return ((await res.json()) as { states: { redis: string } }).states.redis
}

/**
 * Coordinators A and B on PostgreSQL and a Redis of their own, started afresh by each case
 * (`start`) and gone after it (`stop`, in `afterEach`, whatever the case left frozen or half
 * started).
 */
export class TwoCoordinators {
  redis?: OwnRedis
  a?: TestServer
  b?: TestServer

  /** A fresh, empty Redis on a free port, then A and B on it, both with `overrides` and `extras`. */
  async start(overrides: Partial<Config> = {}, extras: ServerExtras = {}) {
    const redis = (this.redis = new OwnRedis(await freePort()))
    await redis.start()
    const config = { redisUrl: redis.url, ...overrides }
    const a = (this.a = await startTestServer('postgres', config, extras))
    const b = (this.b = await startPeerServer(a, config, extras))
    return { redis, a, b }
  }

  /** Thaws Redis, closes A, stops B (the shared schema and folder go with it), kills Redis. */
  async stop() {
    this.redis?.resume()
    await this.a?.close().catch(() => {})
    await this.b?.stop().catch(() => {})
    await this.redis?.kill()
  }
}
