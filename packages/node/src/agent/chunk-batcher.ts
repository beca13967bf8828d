/**
 * @module Coalesces generated text into fewer `job_chunk` frames: the first piece goes out at once
 * (time to first token), later pieces at most every `intervalMs`. Tiny models make a token every
 * millisecond, and a frame per token costs the coordinator more than the tokens are worth.
 */

export class ChunkBatcher {
  #pending = ''
  #timer: NodeJS.Timeout | undefined
  #sentFirst = false

  constructor(
    private readonly emit: (text: string) => void,
    private readonly intervalMs = 20,
  ) {}

  push(text: string): void {
    if (!text) return
    if (!this.#sentFirst) {
      this.#sentFirst = true
      this.emit(text)
      return
    }
    this.#pending += text
    this.#timer ??= setTimeout(() => this.flush(), this.intervalMs)
  }

  /** Sends what is pending now (before the job's final frame). */
  flush(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    if (!this.#pending) return
    const text = this.#pending
    this.#pending = ''
    this.emit(text)
  }

  /** Drops what is pending (the job was cancelled). */
  discard(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#pending = ''
  }
}
