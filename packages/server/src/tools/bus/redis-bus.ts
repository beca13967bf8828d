import { callEach } from '../background.ts'
import { Redis } from 'ioredis'
import type { Bus, BusHandler, BusTraffic } from './bus.ts'

/** The scaled-out bus: Redis pub/sub, so every coordinator process sees every message. */
export class RedisBus implements Bus {
  readonly kind = 'redis' as const
  private pub: Redis
  private sub: Redis
  private handlers = new Map<string, Set<BusHandler>>()
  private pending: Promise<unknown> = Promise.resolve()
  readonly traffic: BusTraffic = { published: 0, publishedBytes: 0, received: 0, receivedBytes: 0 }
  private ready = { pub: false, sub: false }
  private lost = false
  private resumed = new Set<() => void>()

  constructor(
    url: string,
    private prefix = 'meshwork:',
  ) {
    const opts = { maxRetriesPerRequest: 2, lazyConnect: false }
    this.pub = new Redis(url, opts)
    this.sub = new Redis(url, opts)
    // Connection errors surface through ping() in health checks; ioredis keeps reconnecting (and
    // subscribes again). A connection lost after it was ready means messages were lost.
    for (const connection of [this.pub, this.sub]) {
      connection.on('error', () => {})
      connection.on('close', () => {
        if (connection === this.pub ? this.ready.pub : this.ready.sub) this.lost = true
      })
      connection.on('ready', () => {
        if (connection === this.pub) this.ready.pub = true
        else this.ready.sub = true
        if (!this.lost || this.pub.status !== 'ready' || this.sub.status !== 'ready') return
        this.lost = false
        callEach(this.resumed, [], 'bus resumed handler')
      })
    }
    this.sub.on('message', (channel: string, text: string) => {
      this.traffic.received++
      this.traffic.receivedBytes += text.length
      const handlers = this.handlers.get(channel.slice(this.prefix.length))
      if (!handlers) return
      let message: unknown
      try {
        message = JSON.parse(text)
      } catch {
        return
      }
      // One handler that throws neither stops the others nor reaches ioredis's parser.
      callEach(handlers, [message], `bus handler (${channel})`)
    })
  }

  publish(channel: string, message: unknown): void {
    const text = JSON.stringify(message)
    this.traffic.published++
    this.traffic.publishedBytes += text.length
    this.pub.publish(this.prefix + channel, text).catch(() => {
      // fire-and-forget, like the embedded bus; health reports a broken connection
    })
  }

  subscribe(channel: string, handler: BusHandler): () => void {
    let set = this.handlers.get(channel)
    if (!set) {
      this.handlers.set(channel, (set = new Set()))
      const done = this.sub.subscribe(this.prefix + channel).catch(() => {}) // a closed bus has no subscribers
      this.pending = Promise.all([this.pending, done])
    }
    set.add(handler)
    return () => {
      set.delete(handler)
      if (set.size === 0) {
        this.handlers.delete(channel)
        this.sub.unsubscribe(this.prefix + channel).catch(() => {})
      }
    }
  }

  async subscribed(): Promise<void> {
    await this.pending
  }

  /** Messages reach this process through the subscriber connection only: until it is back, and
   * the handlers of a resumed bus have run (realtime streams that missed events end), nothing does,
   * though the publishing connection answers. */
  receiving(): boolean {
    return !this.lost && this.sub.status === 'ready'
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.pub.ping()) === 'PONG'
    } catch {
      return false
    }
  }

  onResumed(handler: () => void): () => void {
    this.resumed.add(handler)
    return () => this.resumed.delete(handler)
  }

  async close(): Promise<void> {
    this.resumed.clear()
    this.pub.disconnect()
    this.sub.disconnect()
  }
}
