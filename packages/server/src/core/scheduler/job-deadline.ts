/**
 * @module A job's overall deadline: how long a node may take for the whole answer, from the
 * request's budget (input to read, output tokens to write) and the speed the job may be expected
 * to run at. Frames that bring nothing (empty or trickling chunks) do not move it, so no node can
 * hold a job, and the user's hold, past it. Honest slow nodes are covered by a conservative floor.
 */

export interface JobSpeed {
  /** Output tokens per second. */
  tokensPerSecond: number
  /** Prompt tokens read per second. */
  promptTokensPerSecond: number
}

export interface DeadlineOptions {
  /** The speed assumed where nothing is measured: slow on purpose (a CPU running a large model). */
  floorSpeed: JobSpeed
  /** Added to every deadline: connection, model warm-up, the offer round trip. */
  graceMs: number
}

export const defaultDeadlineOptions: DeadlineOptions = {
  floorSpeed: { tokensPerSecond: 2, promptTokensPerSecond: 20 },
  graceMs: 30_000,
}

/** A job is held to half the speed the coordinator measured: slower moments are not cut off. */
export const MEASURED_SPEED_SHARE = 0.5

/**
 * The speed a job may be held to. Only what the coordinator measured on the node's real jobs
 * (`node_models.measured_tokens_per_second`, node-health.ts) may raise it above the floor, never
 * the node's own claim; and it is never faster than half the measured speed.
 */
export function expectedJobSpeed(
  measuredTokensPerSecond: number,
  options: DeadlineOptions,
): JobSpeed {
  const measured = Number.isFinite(measuredTokensPerSecond) ? measuredTokensPerSecond : 0
  return {
    tokensPerSecond: Math.max(options.floorSpeed.tokensPerSecond, measured * MEASURED_SPEED_SHARE),
    promptTokensPerSecond: options.floorSpeed.promptTokensPerSecond,
  }
}

/** Milliseconds a job may take from its offer to `job_done`. */
export function jobDeadlineMs(
  budget: { inputTokens: number; outputTokens: number },
  speed: JobSpeed,
  options: DeadlineOptions,
): number {
  const reading = budget.inputTokens / speed.promptTokensPerSecond
  const writing = budget.outputTokens / speed.tokensPerSecond
  return options.graceMs + Math.ceil((reading + writing) * 1000)
}
