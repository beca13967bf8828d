/**
 * @module score-runner
 * A reference node's side of verification: `score_request` frames (sent only to nodes the
 * coordinator trusts) are replayed on the serving model and answered with `score_result`, or
 * `score_failed` when the model is not served here or cannot score.
 */
import type { NodeToServerFrame, ScoreRequestFrame } from '@meshwork/protocol'
import type { LoadedModel } from '../inference/inference-engine.ts'
import { JOB_REJECT_REASONS } from '@meshwork/protocol'

export interface ScoreRunnerOptions {
  serving: (modelId: string) => LoadedModel | null
  send: (frame: NodeToServerFrame) => void
}

export class ScoreRunner {
  readonly #o: ScoreRunnerOptions
  readonly #running = new Set<AbortController>()

  constructor(options: ScoreRunnerOptions) {
    this.#o = options
  }

  score(frame: ScoreRequestFrame): void {
    const fail = (error: string) =>
      this.#o.send({ type: 'score_failed', score_id: frame.score_id, error: error.slice(0, 1000) })
    const model = this.#o.serving(frame.model_id)
    if (!model?.score) return fail(JOB_REJECT_REASONS.notServing)
    const abort = new AbortController()
    this.#running.add(abort)
    model
      .score(
        {
          messages: frame.prompt.messages,
          sampling: frame.sampling,
          text: frame.text,
          tokens: frame.tokens,
        },
        abort.signal,
      )
      .then((r) =>
        this.#o.send({
          type: 'score_result',
          score_id: frame.score_id,
          tokens: r.tokens,
          positions: r.positions,
          ids_match: r.idsMatch,
        }),
      )
      .catch((err: unknown) => {
        if (!abort.signal.aborted) fail(err instanceof Error ? err.message : String(err))
      })
      .finally(() => this.#running.delete(abort))
  }

  /** Stops every running replay (the socket closed); nothing more is sent for them. */
  abortAll(): void {
    for (const abort of this.#running) abort.abort()
    this.#running.clear()
  }
}
