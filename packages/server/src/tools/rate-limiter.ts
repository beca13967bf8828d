/**
 * @module Counted limits (rate-limiter-flexible): in Redis when one is configured, so every
 * coordinator process shares each count, else in this process's memory. A take is one atomic
 * increment (a Lua script in Redis), so concurrent attempts cannot all pass a check before any of
 * them is counted. When Redis cannot be reached a process counts in memory until it can again.
 */
import { Redis } from 'ioredis'
import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible'

export interface LimitOptions {
  /** Takes allowed per window; 0 or Infinity: no limit. */
  points: number
  windowSeconds: number
}

export interface Take {
  allowed: boolean
  /** Takes counted in the current window, this one included. */
  count: number
  /** When the window ends (ms from now). */
  retryAfterMs: number
}

export interface Limiter {
  /** Counts `points` for `key` and says whether it was within the limit. */
  take(key: string, points?: number): Promise<Take>
  /** Gives back points of a take that turned out not to count (a sign-up that failed validation). */
  refund(key: string, points?: number): Promise<void>
}

export interface Limiters {
  /** A limit named `name` (its keys live under `<prefix>:rl:<name>:`). */
  create(name: string, options: LimitOptions): Limiter
  /** Resolves once the Redis connection is up (or after `timeoutMs`, counting in memory meanwhile). */
  ready(timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

/** A take Redis has not answered in this long is counted in memory instead. */
const TAKE_TIMEOUT_MS = 1000
/** A connection silent this long after a command is dropped. Shorter than a take's timeout, so a
 * request that takes two counts one after the other waits for one timeout, not two. */
const SILENT_SOCKET_MS = 500

const unlimited: Limiter = {
  take: async () => ({ allowed: true, count: 0, retryAfterMs: 0 }),
  refund: async () => {},
}

export function createLimiters(options: { redisUrl?: string; prefix: string }): Limiters {
  // A client of its own: the bus's are in subscriber mode. No offline queue, so a take fails over
  // to memory at once instead of waiting for Redis to come back. A Redis that keeps the connection
  // open and answers nothing (frozen, or cut off by a partition: nothing closes the socket) kept
  // every take waiting for good; now a take unanswered in time is counted in memory, and the silent
  // connection is dropped so the takes after it go to memory at once (not ready) until Redis
  // answers a reconnection.
  const redis = options.redisUrl
    ? new Redis(options.redisUrl, {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        commandTimeout: TAKE_TIMEOUT_MS,
        socketTimeout: SILENT_SOCKET_MS,
      })
    : null
  redis?.on('error', () => {}) // reported by health checks; ioredis keeps reconnecting
  return {
    create(name, { points, windowSeconds }) {
      if (!points || points === Infinity) return unlimited
      const base = { points, duration: windowSeconds, keyPrefix: `${options.prefix}:rl:${name}` }
      const limiter: RateLimiterAbstract = redis
        ? new RateLimiterRedis({
            ...base,
            storeClient: redis,
            rejectIfRedisNotReady: true,
            insuranceLimiter: new RateLimiterMemory(base),
          })
        : new RateLimiterMemory(base)
      return {
        async take(key, n = 1) {
          try {
            const res = await limiter.consume(key, n)
            return { allowed: true, count: res.consumedPoints, retryAfterMs: res.msBeforeNext }
          } catch (err) {
            if (!(err instanceof RateLimiterRes)) throw err
            return { allowed: false, count: err.consumedPoints, retryAfterMs: err.msBeforeNext }
          }
        },
        async refund(key, n = 1) {
          await limiter.reward(key, n)
        },
      }
    },
    async ready(timeoutMs = 3000) {
      if (!redis || redis.status === 'ready') return
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          redis.off('ready', done)
          resolve()
        }
        const timer = setTimeout(done, timeoutMs)
        redis.once('ready', done)
      })
    },
    async close() {
      redis?.disconnect()
    },
  }
}
