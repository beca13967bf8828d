/**
 * @module sequence-pool
 * Hands out a context's sequences one job at a time; callers wait for a free one.
 */

/** A fixed set of items lent out one borrower at a time, first come first served. */
export class SequencePool<T> {
  readonly #free: T[]
  readonly #waiters: ((item: T) => void)[] = []

  constructor(items: T[]) {
    this.#free = [...items]
  }

  /** Resolves with a free item; rejects if `signal` aborts while waiting. */
  acquire(signal?: AbortSignal): Promise<T> {
    const item = this.#free.pop()
    if (item !== undefined) return Promise.resolve(item)
    return new Promise((resolve, reject) => {
      const waiter = (it: T) => {
        signal?.removeEventListener('abort', onAbort)
        resolve(it)
      }
      const onAbort = () => {
        const i = this.#waiters.indexOf(waiter)
        if (i >= 0) this.#waiters.splice(i, 1)
        reject(signal?.reason)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#waiters.push(waiter)
    })
  }

  release(item: T): void {
    const next = this.#waiters.shift()
    if (next) next(item)
    else this.#free.push(item)
  }
}
