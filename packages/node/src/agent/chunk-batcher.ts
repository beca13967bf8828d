/**
 * @module Coalesces generated text into fewer `job_chunk` frames: at most one frame per
 * `intervalMs`. A piece goes out at once when the last frame left at least that long ago (the
 * first piece, and every token of a model slower than a frame per interval: a 30 tokens/s model
 * streams each token as it comes); faster pieces wait for the interval's end, together. Tiny
 * models make a token every millisecond, and a frame per token costs the coordinator more than
 * the tokens are worth.
 */

export class ChunkBatcher {
  #pending = ''
  /** Token ids of the pending text; null while the engine gives none (an upstream server). */
  #tokens: number[] | null = null
  #timer: NodeJS.Timeout | undefined
  /** When (Date.now) the last frame went out; none yet: -Infinity. */
  #lastSent = -Infinity

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
    if ((this.#tokens?.length ?? 0) >= this.maxTokens / 2) return this.flush()
    const wait = this.#lastSent + this.intervalMs - Date.now()
    // Text goes out at once when the last frame left an interval ago (the first piece too).
    if (this.#pending && wait <= 0) return this.flush()
    // Otherwise at the interval's end; ids alone (their text is not complete yet) wait a whole
    // interval for text to go with them.
    this.#timer ??= setTimeout(() => this.flush(), wait > 0 ? wait : this.intervalMs)
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
    this.#lastSent = Date.now()
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
