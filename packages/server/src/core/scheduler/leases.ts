/**
 * @module Process leases (issue 8): a coordinator process is alive while its lease is. Scaled out,
 * the lease is a Redis key with a time to live that the process renews; a process that dies (kill
 * -9, lost host) stops renewing and its lease lapses within `ttlMs`. Alone (no Redis), this process
 * is the only one that can be alive: any other owner named in the database is a previous run.
 */
import type { Redis } from 'ioredis'
import { log } from '../../tools/log.ts'

export interface ProcessLeases {
  readonly processId: string
  /** The owners among `owners` whose lease is live (this process's own included). */
  alive(owners: string[]): Promise<Set<string>>
  /** Other live processes (to hand work to when draining). */
  others(): Promise<number>
  /** Stops renewing and gives the lease up at once (a drained process). */
  release(): Promise<void>
  close(): void
}

export const LEASE_TTL_MS = 10_000

export class LocalLeases implements ProcessLeases {
  constructor(readonly processId: string) {}
  async alive(owners: string[]): Promise<Set<string>> {
    return new Set(owners.filter((o) => o === this.processId))
  }
  async others(): Promise<number> {
    return 0
  }
  async release(): Promise<void> {}
  close(): void {}
}

const key = (processId: string) => `lease:${processId}`

export class RedisLeases implements ProcessLeases {
  private timer: NodeJS.Timeout | null = null
  private released = false

  private constructor(
    private redis: Redis,
    readonly processId: string,
    private ttlMs: number,
  ) {}

  /** Takes the lease (before the process owns anything) and renews it every quarter TTL. */
  static async start(redis: Redis, processId: string, ttlMs = LEASE_TTL_MS): Promise<RedisLeases> {
    const leases = new RedisLeases(redis, processId, ttlMs)
    await leases.renew()
    leases.timer = setInterval(
      () => {
        leases.renew().catch((err) => log.error({ err }, 'lease renewal failed'))
      },
      Math.max(50, Math.floor(ttlMs / 4)),
    )
    leases.timer.unref()
    return leases
  }

  private async renew() {
    if (this.released) return
    await this.redis.set(key(this.processId), String(Date.now()), 'PX', this.ttlMs)
  }

  async alive(owners: string[]): Promise<Set<string>> {
    const unique = [...new Set(owners.filter(Boolean))]
    if (!unique.length) return new Set()
    const values = await this.redis.mget(...unique.map(key))
    return new Set(unique.filter((_, i) => values[i] !== null))
  }

  async others(): Promise<number> {
    // keyPrefix applies to commands' keys, not to SCAN's pattern.
    const prefix = this.redis.options.keyPrefix ?? ''
    let cursor = '0'
    let count = 0
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${prefix}lease:*`, 'COUNT', 200)
      cursor = next
      count += keys.filter((k) => k !== `${prefix}${key(this.processId)}`).length
    } while (cursor !== '0')
    return count
  }

  async release(): Promise<void> {
    this.released = true
    this.close()
    await this.redis.del(key(this.processId))
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }
}
