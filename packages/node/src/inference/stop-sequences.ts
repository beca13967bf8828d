/**
 * @module stop-sequences
 * A job's stop sequences (OpenAI's `stop`) applied to the streamed text: the answer ends before the
 * first one, which is never sent. llama.cpp's own stop triggers match token by token and miss
 * sequences whose tokens decode differently alone (SentencePiece drops a word's leading space), so
 * the text is watched here too: text that could be the start of a stop sequence is held back until
 * it is clearly not, and a stop ends the generation through its signal.
 */
import type { GenerationOptions, GenerationResult } from './inference-engine.ts'

export class StopSequenceFilter {
  private pending = ''
  private done = false
  private readonly longest: number

  constructor(
    private readonly stops: readonly string[],
    private readonly emit: (text: string) => void,
  ) {
    this.longest = Math.max(0, ...stops.map((s) => s.length))
  }

  /** True once a stop sequence was seen; later text is dropped. */
  get stopped(): boolean {
    return this.done
  }

  push(text: string): void {
    if (this.done || !text) return
    this.pending += text
    let cut = -1
    for (const stop of this.stops) {
      const at = this.pending.indexOf(stop)
      if (at >= 0 && (cut < 0 || at < cut)) cut = at
    }
    if (cut >= 0) {
      this.done = true
      if (cut > 0) this.emit(this.pending.slice(0, cut))
      this.pending = ''
      return
    }
    const keep = this.heldBack()
    if (this.pending.length > keep) this.emit(this.pending.slice(0, this.pending.length - keep))
    this.pending = this.pending.slice(this.pending.length - keep)
  }

  /** The generation ended without a stop: what was held back is part of the answer. */
  flush(): void {
    if (!this.done && this.pending) this.emit(this.pending)
    this.pending = ''
  }

  /** Length of the longest end of the pending text that begins some stop sequence. */
  private heldBack(): number {
    for (let k = Math.min(this.pending.length, this.longest - 1); k > 0; k--) {
      const tail = this.pending.slice(-k)
      if (this.stops.some((s) => s.startsWith(tail))) return k
    }
    return 0
  }
}

/**
 * Wraps one generation's options: text goes through the filter, and a stop aborts the engine
 * through its own signal (linked to the caller's). `finish` turns the engine's result into the
 * answer's: `stop` when a stop sequence ended it.
 */
export function guardStopSequences(stops: readonly string[], options: GenerationOptions) {
  const filter = new StopSequenceFilter(stops, (text) => options.onText(text))
  const inner = new AbortController()
  const outer = options.signal
  const follow = () => inner.abort(outer?.reason)
  if (outer?.aborted) follow()
  else outer?.addEventListener('abort', follow, { once: true })
  return {
    options: {
      signal: inner.signal,
      onText: (text: string) => {
        filter.push(text)
        if (filter.stopped && !inner.signal.aborted) inner.abort()
      },
    } satisfies GenerationOptions,
    finish(result: GenerationResult): GenerationResult {
      outer?.removeEventListener('abort', follow)
      filter.flush()
      return filter.stopped ? { ...result, stopReason: 'stop' } : result
    },
    release() {
      outer?.removeEventListener('abort', follow)
    },
  }
}
