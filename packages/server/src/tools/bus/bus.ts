/**
 * @module The message bus between coordinator parts (and, scaled out, between processes):
 * fire-and-forget publish/subscribe of JSON-serialisable messages by channel.
 */

export type BusHandler = (message: unknown) => void

export interface Bus {
  /** 'embedded' (in-process) or 'redis'. */
  readonly kind: 'embedded' | 'redis'
  publish(channel: string, message: unknown): void
  /** Messages and bytes sent to and received from the backend (Redis only; metrics). */
  readonly traffic?: BusTraffic
  subscribe(channel: string, handler: BusHandler): () => void
  /** Resolves once every subscription made so far receives messages. */
  subscribed(): Promise<void>
  /** A real round trip to the backend: whether what is published now gets out. */
  ping(): Promise<boolean>
  /**
   * Whether messages reach this process now: its subscriptions' connection is up and the bus has
   * resumed after a loss (health needs both; a publisher needs only `ping`).
   */
  receiving(): boolean
  /**
   * `handler` runs each time the backend is reached again after its connection was lost: what was
   * published meanwhile never arrived anywhere. The embedded bus is never lost.
   */
  onResumed(handler: () => void): () => void
  close(): Promise<void>
}

export interface BusTraffic {
  published: number
  publishedBytes: number
  received: number
  receivedBytes: number
}
