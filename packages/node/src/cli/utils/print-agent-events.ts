/**
 * @module print-agent-events
 * Terminal rendering of a running agent's events (the library itself never prints).
 */
import type { EventEmitter } from 'node:events'
import type { AgentEventMap } from '../../agent/start-agent.ts'

/** Writes one line per notable event to `out`. */
export function printAgentEvents(
  events: EventEmitter<AgentEventMap>,
  out: NodeJS.WritableStream,
): void {
  const line = (s: string) => out.write(`${new Date().toISOString()} ${s}\n`)
  events.on('connected', (hw) =>
    line(
      `connected (${hw.cpu_cores} cores, ${(hw.memory_bytes / 2 ** 30).toFixed(1)} GiB, gpu: ${hw.gpu ?? 'none'})`,
    ),
  )
  events.on('disconnected', ({ code, reconnectInMs }) =>
    line(
      reconnectInMs === null
        ? `disconnected (${code})`
        : `disconnected (${code}), reconnecting in ${(reconnectInMs / 1000).toFixed(1)} s`,
    ),
  )
  const lastProgress = new Map<string, number>()
  events.on('model_status', (s) => {
    const step = Math.floor(s.download_progress / 10)
    if (!s.is_downloaded && s.download_progress > 0 && lastProgress.get(s.node_model_id) === step)
      return
    lastProgress.set(s.node_model_id, step)
    const state = s.is_serving
      ? `serving at ${s.tokens_per_second.toFixed(1)} tokens/s`
      : s.is_downloaded
        ? 'downloaded'
        : s.download_progress > 0
          ? `downloading ${s.download_progress.toFixed(0)}%`
          : 'not downloaded'
    line(
      `model ${s.node_model_id}: ${state}${s.error_message ? ` (error: ${s.error_message})` : ''}`,
    )
  })
  events.on('job', (e) => {
    if (e.kind === 'started') line(`job ${e.jobId} started (${e.modelId})`)
    else if (e.kind === 'done')
      line(`job ${e.jobId} done: ${e.tokensOutput} tokens in ${e.processingTimeMs} ms`)
    else if (e.kind === 'failed') line(`job ${e.jobId} failed: ${e.error}`)
    else if (e.kind === 'cancelled') line(`job ${e.jobId} cancelled`)
    else line(`job ${e.jobId} rejected: ${e.reason}`)
  })
  events.on('invalid_frame', (err) => line(`ignored a frame: ${err.message}`))
}
