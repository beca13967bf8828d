import type { Bus, BusHandler } from './bus.ts'
import { callEach } from '../background.ts'

/** The embedded bus: synchronous in-process delivery; what a single coordinator process needs. */
export class MemoryBus implements Bus {
  readonly kind = 'embedded' as const
  private channels = new Map<string, Set<BusHandler>>()

  publish(channel: string, message: unknown): void {
    // One handler that throws neither stops the others nor reaches the publisher.
    callEach(this.channels.get(channel) ?? [], [message], `bus handler (${channel})`)
  }

  subscribe(channel: string, handler: BusHandler): () => void {
    let set = this.channels.get(channel)
    if (!set) this.channels.set(channel, (set = new Set()))
    set.add(handler)
    return () => set.delete(handler)
  }

  async subscribed(): Promise<void> {}

  async ping(): Promise<boolean> {
    return true
  }

  receiving(): boolean {
    return true
  }

  onResumed(): () => void {
    return () => {}
  }

  async close(): Promise<void> {
    this.channels.clear()
  }
}
