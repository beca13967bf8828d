/**
 * @module choose-threads
 * Thread count for llama.cpp. On small shared machines thread contention dominates tiny models
 * (stories260K: ~1,500 tok/s with 1 thread, ~70 with 2, ~2 with the default on a 2-core box), so
 * small models get one thread and only large ones use the cores.
 */

/** Models below this size are fastest on one thread: per-token work is too small to split. */
export const SINGLE_THREAD_MAX_BYTES = 256 * 1024 * 1024

/**
 * `requested` wins when given (>= 1). Otherwise: 1 thread for small models, else all math cores
 * but one (leaving one for the agent, the socket and the OS), at least 1.
 */
export function chooseThreads(input: {
  requested?: number | 'auto'
  modelBytes: number
  mathCores: number
}): number {
  if (typeof input.requested === 'number' && input.requested >= 1)
    return Math.floor(input.requested)
  if (input.modelBytes < SINGLE_THREAD_MAX_BYTES) return 1
  return Math.max(1, input.mathCores - 1)
}
