/**
 * @module A fixed-window rate limit per key (a client address): at most `limit` takes per window.
 * Memory stays bounded: keys of finished windows are dropped as the map is swept.
 */

export interface RateLimitOptions {
  limit: number
  windowMs: number
  now?: () => number
}

export class RateLimit {
  private windows = new Map<string, { start: number; count: number }>()
  private readonly now: () => number

  constructor(private readonly opts: RateLimitOptions) {
    this.now = opts.now ?? Date.now
  }

  /** Counts one use by `key`; false when the key has used up its window. */
  take(key: string): boolean {
    const now = this.now()
    let w = this.windows.get(key)
    if (!w || now - w.start >= this.opts.windowMs) {
      if (this.windows.size >= 10_000) this.sweep(now)
      w = { start: now, count: 0 }
      this.windows.set(key, w)
    }
    if (w.count >= this.opts.limit) return false
    w.count++
    return true
  }

  private sweep(now: number) {
    for (const [key, w] of this.windows) if (now - w.start >= this.opts.windowMs) this.windows.delete(key)
    if (this.windows.size >= 10_000) this.windows.clear() // a spray of addresses: start over
  }
}
