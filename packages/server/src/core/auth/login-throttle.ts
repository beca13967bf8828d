/**
 * @module Slows down repeated failed logins from one address: after a few free attempts each
 * further failure doubles the wait before the next try is answered, and a burst is refused with 429.
 */

export interface ThrottleOptions {
  freeAttempts: number
  windowMs: number
  maxDelayMs: number
  /** Failures in the window after which attempts are refused outright. */
  blockAfter: number
  now?: () => number
}

interface Entry {
  failures: number
  first: number
}

export class LoginThrottle {
  private entries = new Map<string, Entry>()
  private readonly opts: Required<ThrottleOptions>

  constructor(opts: Partial<ThrottleOptions> = {}) {
    this.opts = {
      freeAttempts: 5,
      windowMs: 15 * 60_000,
      maxDelayMs: 8_000,
      blockAfter: 30,
      now: Date.now,
      ...opts,
    }
  }

  private entry(key: string): Entry | undefined {
    const e = this.entries.get(key)
    if (e && this.opts.now() - e.first > this.opts.windowMs) {
      this.entries.delete(key)
      return undefined
    }
    return e
  }

  /** Milliseconds to wait before answering this address, or Infinity when it is blocked. */
  delayFor(key: string): number {
    const e = this.entry(key)
    if (!e || e.failures < this.opts.freeAttempts) return 0
    if (e.failures >= this.opts.blockAfter) return Infinity
    return Math.min(this.opts.maxDelayMs, 250 * 2 ** (e.failures - this.opts.freeAttempts))
  }

  recordFailure(key: string): void {
    const e = this.entry(key)
    if (e) e.failures++
    else this.entries.set(key, { failures: 1, first: this.opts.now() })
    if (this.entries.size > 100_000) this.entries.clear() // bounded memory under a spray of addresses
  }

  recordSuccess(key: string): void {
    this.entries.delete(key)
  }
}
