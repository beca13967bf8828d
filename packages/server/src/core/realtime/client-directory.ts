/**
 * @module Where each realtime client lives and how many streams each address and user holds, for
 * every process: the embedded directory (one process) and the Redis one (scaled out), in which
 * entries are leases that their process renews, so those of a process that died expire.
 */
import type { Redis } from 'ioredis'

export interface ClientEntry {
  id: string
  address: string
  /** The signed-in user whose stream it is, once a subscription request said so. */
  user?: string
}

export interface ClientDirectory {
  /** Registers a new stream of this process; false when its address already has `limit` (0: none). */
  open(entry: ClientEntry, limit: number): Promise<boolean>
  /** Counts the stream against `entry.user`; false when that user already has `limit` (0: none). */
  claim(entry: ClientEntry, limit: number): Promise<boolean>
  /** The process holding the stream, if any. */
  locate(id: string): Promise<string | undefined>
  close(entry: ClientEntry): Promise<void>
  /** Keeps this process's entries alive (scaled out). */
  renew(entries: ClientEntry[]): Promise<void>
}

/** One process: plain maps. */
export class MemoryDirectory implements ClientDirectory {
  private byAddress = new Map<string, Set<string>>()
  private byUser = new Map<string, Set<string>>()
  private ids = new Set<string>()

  constructor(private processId: string) {}

  async open(entry: ClientEntry, limit: number) {
    if (!add(this.byAddress, entry.address, entry.id, limit)) return false
    this.ids.add(entry.id)
    return true
  }

  async claim(entry: ClientEntry, limit: number) {
    return add(this.byUser, entry.user!, entry.id, limit)
  }

  async locate(id: string) {
    return this.ids.has(id) ? this.processId : undefined
  }

  async close(entry: ClientEntry) {
    this.ids.delete(entry.id)
    remove(this.byAddress, entry.address, entry.id)
    if (entry.user) remove(this.byUser, entry.user, entry.id)
  }

  async renew() {}
}

function add(map: Map<string, Set<string>>, key: string, id: string, limit: number): boolean {
  let set = map.get(key)
  if (!set) map.set(key, (set = new Set()))
  if (limit > 0 && set.size >= limit && !set.has(id)) return false
  set.add(id)
  return true
}

function remove(map: Map<string, Set<string>>, key: string, id: string) {
  const set = map.get(key)
  set?.delete(id)
  if (set?.size === 0) map.delete(key)
}

/** How long a stream's open or subscription waits for Redis. A Redis that keeps the connection
 * open and answers nothing (frozen, or cut off by a partition: nothing closes the socket) kept it
 * waiting for good; past this it fails like an unreachable Redis (503, the client retries). */
const ANSWER_MS = 1000

function inTime<T>(call: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Redis did not answer ${what} within ${ANSWER_MS} ms`)),
      ANSWER_MS,
    )
  })
  // The call still settles later, and race has a handler on it: no unhandled rejection.
  return Promise.race([call, late]).finally(() => clearTimeout(timer))
}

/** Counts live members of a sorted set of leases (score: expiry) and adds one unless full. */
const addLease = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local limit = tonumber(ARGV[3])
if limit > 0 and redis.call('ZSCORE', KEYS[1], ARGV[4]) == false and redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if KEYS[2] then redis.call('SET', KEYS[2], ARGV[6], 'PX', ARGV[5]) end
return 1
`

type LeaseCommand = (keys: number, ...args: Array<string | number>) => Promise<number>

/** Scaled out: leases in Redis (keys under the deployment's prefix, set on the connection). */
export class RedisDirectory implements ClientDirectory {
  private addLease: LeaseCommand

  constructor(
    private redis: Redis,
    private processId: string,
    /** How long an entry lives without renewal. */
    private leaseMs = 60_000,
  ) {
    redis.defineCommand('meshworkAddLease', { lua: addLease })
    this.addLease = (redis as unknown as { meshworkAddLease: LeaseCommand }).meshworkAddLease.bind(
      redis,
    )
  }

  async open(entry: ClientEntry, limit: number) {
    const now = Date.now()
    const adding = this.addLease(
      2,
      addressKey(entry.address),
      clientKey(entry.id),
      now,
      now + this.leaseMs,
      limit,
      entry.id,
      this.leaseMs,
      this.processId,
    )
    try {
      return (await inTime(adding, 'opening a realtime stream')) === 1
    } catch (err) {
      // Unanswered, the lease may still be written once Redis answers, and would count against
      // the address for its whole life with no stream behind it: removed after it (one connection
      // keeps the order). Its failure is not reported: Redis is away, and the refusal says so.
      this.close(entry).catch(() => {})
      throw err
    }
  }

  async claim(entry: ClientEntry, limit: number) {
    const now = Date.now()
    const adding = this.addLease(
      1,
      userKey(entry.user!),
      now,
      now + this.leaseMs,
      limit,
      entry.id,
      this.leaseMs,
    )
    return (await inTime(adding, 'counting a realtime stream')) === 1
  }

  async locate(id: string) {
    return (await inTime(this.redis.get(clientKey(id)), 'locating a realtime stream')) ?? undefined
  }

  async close(entry: ClientEntry) {
    const batch = this.redis
      .multi()
      .zrem(addressKey(entry.address), entry.id)
      .del(clientKey(entry.id))
    if (entry.user) batch.zrem(userKey(entry.user), entry.id)
    await batch.exec()
  }

  async renew(entries: ClientEntry[]) {
    if (!entries.length) return
    const expires = Date.now() + this.leaseMs
    const batch = this.redis.pipeline()
    for (const e of entries) {
      batch
        .zadd(addressKey(e.address), 'XX', expires, e.id)
        .pexpire(addressKey(e.address), this.leaseMs)
      batch.set(clientKey(e.id), this.processId, 'PX', this.leaseMs)
      if (e.user)
        batch.zadd(userKey(e.user), 'XX', expires, e.id).pexpire(userKey(e.user), this.leaseMs)
    }
    await batch.exec()
  }
}

const clientKey = (id: string) => `realtime:client:${id}`
const addressKey = (address: string) => `realtime:address:${address}`
const userKey = (user: string) => `realtime:user:${user}`
