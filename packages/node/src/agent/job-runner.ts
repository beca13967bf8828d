/**
 * @module job-runner
 * Runs `job_offer`s on the serving models: accept or reject, stream chunks, finish with token
 * counts and time, or fail. A cancelled job (by `job_cancel` or a dropped socket) sends nothing more.
 */
import { ChunkBatcher } from './chunk-batcher.ts'
import type { JobOfferFrame, NodeToServerFrame } from '@meshwork/protocol'
import { GenerationAbortedError, type LoadedModel } from '../inference/inference-engine.ts'
import { JOB_REJECT_REASONS } from '@meshwork/protocol'

export interface JobRunnerOptions {
  maxJobs: number
  serving: (modelId: string) => LoadedModel | null
  send: (frame: NodeToServerFrame) => void
  onJobEvent?: (event: JobEvent) => void
}

export type JobEvent =
  | { kind: 'rejected'; jobId: string; reason: string }
  | { kind: 'started'; jobId: string; modelId: string }
  | { kind: 'done'; jobId: string; tokensOutput: number; processingTimeMs: number }
  | { kind: 'failed'; jobId: string; error: string }
  | { kind: 'cancelled'; jobId: string }

export const REJECT_NO_SLOT = JOB_REJECT_REASONS.noSlot
export const REJECT_NOT_SERVING = JOB_REJECT_REASONS.notServing

export class JobRunner {
  readonly #o: JobRunnerOptions
  readonly #running = new Map<string, { abort: AbortController; done: Promise<void> }>()
  /** Shutting down: offers are turned down as if full; running jobs go on. */
  draining = false

  constructor(options: JobRunnerOptions) {
    this.#o = options
  }

  get busy(): number {
    return this.#running.size
  }

  offer(job: JobOfferFrame): void {
    const reject = (reason: string) => {
      this.#o.send({ type: 'job_rejected', job_id: job.job_id, reason })
      this.#o.onJobEvent?.({ kind: 'rejected', jobId: job.job_id, reason })
    }
    if (this.#running.has(job.job_id)) return // a duplicate offer of a job already running
    if (this.draining || this.#running.size >= this.#o.maxJobs) return reject(REJECT_NO_SLOT)
    const model = this.#o.serving(job.model_id)
    if (!model) return reject(REJECT_NOT_SERVING)
    const abort = new AbortController()
    const done = this.#run(job, model, abort.signal).finally(() => this.#running.delete(job.job_id))
    this.#running.set(job.job_id, { abort, done })
  }

  cancel(jobId: string): void {
    this.#running.get(jobId)?.abort.abort()
  }

  /** Resolves when no job runs, or at `until` (Date.now()). */
  async settled(until: number): Promise<void> {
    while (this.#running.size && Date.now() < until) {
      const left = until - Date.now()
      await Promise.race([
        Promise.allSettled([...this.#running.values()].map((j) => j.done)),
        new Promise((r) => setTimeout(r, Math.max(0, left)).unref()),
      ])
    }
  }

  /** Aborts every running job and waits for them to stop. */
  async abortAll(): Promise<void> {
    const jobs = [...this.#running.values()]
    for (const j of jobs) j.abort.abort()
    await Promise.all(jobs.map((j) => j.done))
  }

  async #run(job: JobOfferFrame, model: LoadedModel, signal: AbortSignal): Promise<void> {
    const { send, onJobEvent } = this.#o
    send({ type: 'job_accepted', job_id: job.job_id })
    onJobEvent?.({ kind: 'started', jobId: job.job_id, modelId: job.model_id })
    const started = performance.now()
    const chunks = new ChunkBatcher((text, tokens) => {
      if (signal.aborted) return
      send({ type: 'job_chunk', job_id: job.job_id, text, ...(tokens ? { tokens } : {}) })
    })
    try {
      const res = await model.generate(
        { messages: job.prompt.messages, sampling: job.sampling },
        { signal, onText: (text, tokens) => chunks.push(text, tokens) },
      )
      if (signal.aborted) throw new GenerationAbortedError()
      chunks.flush()
      const processingTimeMs = Math.round(performance.now() - started)
      send({
        type: 'job_done',
        job_id: job.job_id,
        tokens_input: res.tokensInput,
        tokens_output: res.tokensOutput,
        processing_time_ms: processingTimeMs,
      })
      onJobEvent?.({
        kind: 'done',
        jobId: job.job_id,
        tokensOutput: res.tokensOutput,
        processingTimeMs,
      })
    } catch (err) {
      chunks.discard()
      if (signal.aborted || err instanceof GenerationAbortedError) {
        onJobEvent?.({ kind: 'cancelled', jobId: job.job_id })
        return
      }
      const error = (err instanceof Error ? err.message : String(err)).slice(0, 1000)
      send({ type: 'job_failed', job_id: job.job_id, error })
      onJobEvent?.({ kind: 'failed', jobId: job.job_id, error })
    }
  }
}
