/**
 * @module Choosing a node reads the database, and a read can fail: the request stays queued and
 * the queue is looked at again shortly; after CHOOSE_RETRIES such failures the request fails
 * retryable rather than wait for ever.
 */
import { log } from '../../tools/log.ts'
import type { Work } from './work.ts'

/** Failed choices of a node (database errors) before a queued request fails, and the pause
 * before the queue is looked at again. */
const CHOOSE_RETRIES = 5
const CHOOSE_RETRY_MS = 1000

export class ChoiceRetries {
  /** Queued requests whose choice of a node failed on a database error, and how often. */
  private failures = new WeakMap<Work, number>()
  private timer: NodeJS.Timeout | null = null

  /** `retry`: looks at the queue again. */
  constructor(private retry: () => void) {}

  /** Counts a failed choice for the request: true when it has failed too often and must end;
   * otherwise the queue is looked at again shortly. */
  failed(work: Work, err: unknown): boolean {
    const failures = (this.failures.get(work) ?? 0) + 1
    log.error({ err, requestId: work.requestId, failures }, 'choosing a node failed')
    if (failures >= CHOOSE_RETRIES) {
      this.failures.delete(work)
      return true
    }
    this.failures.set(work, failures)
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null
        this.retry()
      }, CHOOSE_RETRY_MS)
      this.timer.unref()
    }
    return false
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer)
  }
}
