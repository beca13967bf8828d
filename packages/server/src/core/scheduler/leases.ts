/**
 * @module Process leases (issue 8): a coordinator process is alive while its lease is. Scaled out,
 * the lease is a Redis key with a time to live that the process renews; a process that dies (kill
 * -9, lost host) stops renewing and its lease lapses within `ttlMs`. Alone (no Redis), this process
 * is the only one that can be alive: any other owner named in the database is a previous run.
 *
 * A lease missing from Redis proves its owner dead only while Redis has kept its data and this
 * process could renew: Redis restarted without persistence (or failed over to a replica that lacked
 * the keys) has lost every live process's lease until each renews, within a quarter TTL. So when a
 * renewal fails, or finds this process's own lease gone, no owner is taken for dead for one TTL.
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
  private renewed = false
  /** The renewal in flight: `alive` reads Redis only once its answer was looked at. */
  private renewing: Promise<unknown> = Promise.resolve()
  /** Renewals are failing (Redis unreachable): logged once, not four times a lease. */
  private failing = false
  /** Before this moment an absent lease proves nothing (see the module comment). */
  private trustFrom = 0

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
        leases.renew().catch((err) => {
          if (!leases.failing) log.error({ err }, 'lease renewal failed (retrying)')
          leases.failing = true
          leases.distrust()
        })
      },
      Math.max(50, Math.floor(ttlMs / 4)),
    )
    leases.timer.unref()
    return leases
  }

  private distrust() {
    this.trustFrom = Math.max(this.trustFrom, Date.now() + this.ttlMs)
  }

  private renew(): Promise<void> {
    const renewal = this.renewOnce()
    this.renewing = renewal.catch(() => {})
    return renewal
  }

  private async renewOnce() {
    if (this.released) return
    const results = await this.redis
      .multi()
      .get(key(this.processId))
      .set(key(this.processId), String(Date.now()), 'PX', this.ttlMs)
      .exec()
    // A renewal Redis does not answer in time rejects above (the shared client's command
    // timeout, app.ts): it failed, even if Redis writes it once it answers again.
    const [error, previous] = results?.[0] ?? [new Error('lease renewal was discarded'), null]
    if (error) throw error
    // Our own lease was gone: Redis lost its data (or we could not renew for a whole TTL).
    if (this.failing || (this.renewed && previous === null)) {
      if (this.failing) log.info('lease renewed again')
      this.failing = false
      this.distrust()
    }
    this.renewed = true
  }

  async alive(owners: string[]): Promise<Set<string>> {
    const unique = [...new Set(owners.filter(Boolean))]
    if (!unique.length) return new Set()
    // A renewal sent before this read may have found our lease gone: its answer comes first.
    await this.renewing
    const values = await this.redis.mget(key(this.processId), ...unique.map(key))
    if (values[0] === null && !this.released) this.distrust()
    // Redis may not hold every live lease yet: nobody is taken for dead.
    if (Date.now() < this.trustFrom) return new Set(unique)
    return new Set(unique.filter((_, i) => values[i + 1] !== null))
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
