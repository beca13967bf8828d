/**
 * @module Coalesces a stream of changes into at most one publish per interval: the first change
 * goes out at once, later ones wait for the interval to pass, and only the latest state is sent.
 */
export class CoalescedPublisher {
  private last = 0
  private timer: NodeJS.Timeout | null = null
  private stopped = false

  constructor(
    private intervalMs: number,
    private publish: () => void,
  ) {}

  /** Something changed: publish now or at the end of the current interval. */
  touch(): void {
    if (this.stopped || this.timer) return
    const wait = this.last + this.intervalMs - Date.now()
    if (wait <= 0) return this.flush()
    this.timer = setTimeout(() => this.flush(), wait)
  }

  /** No more publishes (the final state is written elsewhere). */
  stop(): void {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }

  private flush() {
    this.timer = null
    if (this.stopped) return
    this.last = Date.now()
    this.publish()
  }
}
