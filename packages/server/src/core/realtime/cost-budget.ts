/**
 * @module What realtime delivery may spend per subscriber owner (a user, or a guest's address):
 * a token bucket of milliseconds of work, refilled at a fixed rate. Matching events against many
 * filters is paid from the owner's own bucket, so one user's subscriptions cannot take the process
 * from everyone else; an owner whose bucket is empty misses events until it refills.
 */
export interface CostBudgetOptions {
  /** Milliseconds of delivery work an owner may use per second, on average. */
  msPerSecond: number
  /** Milliseconds an owner may use at once after being idle. */
  burstMs: number
}

export const defaultCostBudget: CostBudgetOptions = { msPerSecond: 50, burstMs: 250 }

interface Bucket {
  ms: number
  at: number
}

export class CostBudget {
  private buckets = new Map<string, Bucket>()

  constructor(
    private options: CostBudgetOptions = defaultCostBudget,
    private now: () => number = () => performance.now(),
  ) {}

  /** True while the owner has some budget left. */
  allows(owner: string): boolean {
    return this.bucket(owner).ms > 0
  }

  /** Charges work done (it may take the bucket below zero: the owner then waits longer). */
  charge(owner: string, ms: number): void {
    if (ms > 0) this.bucket(owner).ms -= ms
  }

  private bucket(owner: string): Bucket {
    const now = this.now()
    let b = this.buckets.get(owner)
    if (!b) {
      // Full buckets carry no information: forget them so the map stays as small as the active set.
      if (this.buckets.size >= 10_000) this.prune(now)
      b = { ms: this.options.burstMs, at: now }
      this.buckets.set(owner, b)
      return b
    }
    b.ms = Math.min(this.options.burstMs, b.ms + ((now - b.at) / 1000) * this.options.msPerSecond)
    b.at = now
    return b
  }

  private prune(now: number) {
    for (const [owner, b] of this.buckets) {
      if (b.ms + ((now - b.at) / 1000) * this.options.msPerSecond >= this.options.burstMs)
        this.buckets.delete(owner)
    }
  }
}
