/**
 * @module The message bus between coordinator parts (and, scaled out, between processes):
 * fire-and-forget publish/subscribe of JSON-serialisable messages by channel.
 */

export type BusHandler = (message: unknown) => void

export interface Bus {
  /** 'embedded' (in-process) or 'redis'. */
  readonly kind: 'embedded' | 'redis'
  publish(channel: string, message: unknown): void
  subscribe(channel: string, handler: BusHandler): () => void
  /** Resolves once every subscription made so far receives messages. */
  subscribed(): Promise<void>
  /** A real round trip to the backend, for health checks. */
  ping(): Promise<boolean>
  close(): Promise<void>
}
