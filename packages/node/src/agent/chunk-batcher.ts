/**
 * @module Coalesces generated text into fewer `job_chunk` frames: the first piece goes out at once
 * (time to first token), later pieces at most every `intervalMs`. Tiny models make a token every
 * millisecond, and a frame per token costs the coordinator more than the tokens are worth.
 */

export class ChunkBatcher {
  #pending = ''
  /** Token ids of the pending text; null while the engine gives none (an upstream server). */
  #tokens: number[] | null = null
  #timer: NodeJS.Timeout | undefined
  #sentFirst = false

  constructor(
    private readonly emit: (text: string, tokens?: number[]) => void,
    private readonly intervalMs = 20,
    /** Most token ids one frame carries (the protocol's limit). */
    private readonly maxTokens = 4096,
  ) {}

  push(text: string, tokens?: readonly number[]): void {
    if (!text && !tokens?.length) return
    if (tokens) (this.#tokens ??= []).push(...tokens)
    this.#pending += text
    if (!this.#sentFirst && text) {
      this.#sentFirst = true
      return this.flush()
    }
    if ((this.#tokens?.length ?? 0) >= this.maxTokens / 2) return this.flush()
    this.#timer ??= setTimeout(() => this.flush(), this.intervalMs)
  }

  /** Sends what is pending now (before the job's final frame). */
  flush(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    if (!this.#pending && !this.#tokens?.length) return
    const text = this.#pending
    const tokens = this.#tokens
    this.#pending = ''
    this.#tokens = null
    if (tokens) this.emit(text, tokens)
    else this.emit(text)
  }

  /** Drops what is pending (the job was cancelled). */
  discard(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#pending = ''
    this.#tokens = null
  }
}
