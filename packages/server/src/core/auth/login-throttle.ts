/**
 * @module Slows down and then refuses password guessing, counted per client address and per
 * account (the identity as typed, lower-cased), in the shared limiter store. Every attempt is
 * counted before its password is checked, so concurrent guesses cannot all slip through before
 * the first failure is recorded; a successful sign-in gives back its own count only, so one
 * account's success never clears another account's (or another address's) failures.
 */
import { tooManyRequests } from '../../tools/api-error.ts'
import type { Limiters } from '../../tools/rate-limiter.ts'

export interface ThrottleOptions {
  /** Attempts in a window answered without delay; each further one waits twice as long. */
  freeAttempts: number
  windowSeconds: number
  /** The first delay; it doubles per attempt up to maxDelayMs. */
  baseDelayMs: number
  maxDelayMs: number
  /** Attempts from one address in a window after which it is refused with 429. */
  perAddress: number
  /** Attempts on one account in a window (from anywhere) after which it is refused with 429. */
  perAccount: number
}

export const defaultThrottle: ThrottleOptions = {
  freeAttempts: 5,
  windowSeconds: 15 * 60,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
  perAddress: 30,
  perAccount: 20,
}

export interface Attempt {
  /** How long to wait before checking the password. */
  delayMs: number
  /** The password was right: this attempt does not count as a failure. */
  succeeded(): Promise<void>
}

export class LoginThrottle {
  private readonly opts: ThrottleOptions
  private byAddress
  private byAccount

  constructor(limiters: Limiters, opts: Partial<ThrottleOptions> = {}) {
    this.opts = { ...defaultThrottle, ...opts }
    const window = this.opts.windowSeconds
    this.byAddress = limiters.create('login-address', {
      points: this.opts.perAddress,
      windowSeconds: window,
    })
    this.byAccount = limiters.create('login-account', {
      points: this.opts.perAccount,
      windowSeconds: window,
    })
  }

  /** Counts an attempt on `account` from `address`; throws 429 when either is used up. */
  async begin(address: string, account: string): Promise<Attempt> {
    const accountKey = account.toLowerCase()
    const [fromAddress, onAccount] = await Promise.all([
      this.byAddress.take(address),
      this.byAccount.take(accountKey),
    ])
    if (!fromAddress.allowed || !onAccount.allowed) {
      // A refused attempt checks no password, so it is no attempt: the count that still had room
      // gets it back (the one that is used up stays so until its window ends).
      if (fromAddress.allowed) await this.byAddress.refund(address)
      if (onAccount.allowed) await this.byAccount.refund(accountKey)
      throw tooManyRequests(
        Math.max(
          fromAddress.allowed ? 0 : fromAddress.retryAfterMs,
          onAccount.allowed ? 0 : onAccount.retryAfterMs,
        ),
      )
    }
    const earlier = Math.max(fromAddress.count, onAccount.count) - 1
    const over = earlier - this.opts.freeAttempts
    const delayMs = over < 0 ? 0 : Math.min(this.opts.maxDelayMs, this.opts.baseDelayMs * 2 ** over)
    return {
      delayMs,
      succeeded: async () => {
        await Promise.all([this.byAddress.refund(address), this.byAccount.refund(accountKey)])
      },
    }
  }
}
