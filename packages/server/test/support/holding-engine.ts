/**
 * @module A real llama.cpp engine (threads 1) for a real node in tests, whose next answer can be
 * held: it passes on the first pieces the model really wrote, then keeps the job open, sending
 * nothing more, until the job is aborted (`job_cancel`). The tiny test models write a whole
 * answer in milliseconds, so this is how a test gets a client's abort to land mid-answer, every
 * time, without timing.
 */
import {
  createLlamaEngine,
  GenerationAbortedError,
  type InferenceEngine,
  type LoadedModel,
} from '@meshwork/node'

export interface HeldRun {
  /** The text passed on before the hold. */
  forwarded: string
  /** Token ids of the text passed on. */
  forwardedTokens: number
  /** Pieces the model wrote in all (it goes on writing into the hold until stopped or done). */
  written: number
  /** The job was aborted (the node stopped it). */
  aborted: boolean
}

export interface HoldingControl {
  /**
   * The next answer to a request whose last message is `prompt` passes on `after` pieces, then
   * holds (null: nothing is held). Other generations (speed measurement, canaries) run as usual.
   */
  next: { prompt: string; after: number } | null
  runs: HeldRun[]
}

const HOLD_AT_MOST_MS = 60_000

export function holdingEngine(): { engine: InferenceEngine; control: HoldingControl } {
  const inner = createLlamaEngine({ gpu: false, threads: 1 })
  const control: HoldingControl = { next: null, runs: [] }
  const wrap = (model: LoadedModel): LoadedModel => ({
    ref: model.ref,
    unload: () => model.unload(),
    ...(model.score ? { score: model.score.bind(model) } : {}),
    async generate(request, options) {
      const next = control.next
      if (!next || request.messages.at(-1)?.content !== next.prompt)
        return model.generate(request, options)
      control.next = null
      const holdAfter = next.after
      const run: HeldRun = { forwarded: '', forwardedTokens: 0, written: 0, aborted: false }
      control.runs.push(run)
      const signal = options.signal
      let pieces = 0
      try {
        await model.generate(request, {
          signal,
          onText: (text, tokens) => {
            run.written++
            if (pieces++ >= holdAfter) return
            run.forwarded += text
            run.forwardedTokens += tokens?.length ?? 0
            options.onText(text, tokens)
          },
        })
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, HOLD_AT_MOST_MS)
          if (signal?.aborted) resolve()
          signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
        })
      } catch (err) {
        if (!signal?.aborted) throw err
      }
      run.aborted = Boolean(signal?.aborted)
      throw new GenerationAbortedError()
    },
  })
  const engine: InferenceEngine = {
    info: inner.info,
    needsModelFile: inner.needsModelFile,
    load: async (ref, signal) => wrap(await inner.load(ref, signal)),
    describeGpu: () => inner.describeGpu(),
    describe: () => inner.describe(),
    ...(inner.describeVram ? { describeVram: () => inner.describeVram!() } : {}),
    dispose: () => inner.dispose(),
  }
  return { engine, control }
}
