/**
 * @module print-agent-events
 * Terminal rendering of a running agent's events (the library itself never prints). Lines name
 * the coordinator's URL and the models by their catalogue names, never by record ids.
 */
import type { Logger } from 'pino'
import type { RunningAgent } from '../../agent/start-agent.ts'
import { printable } from './printable.ts'

/** Logs one line per notable event (readable, or JSON with `--json`: agent-log.ts). */
export function printAgentEvents(agent: RunningAgent, server: string, log: Logger): void {
  const { events } = agent
  // Model names, ids and errors come from the coordinator: no terminal escapes from them.
  const line = (s: string, level: 'info' | 'warn' = 'info') => log[level](printable(s))
  const origin = new URL(server).origin
  const name = (id: string) => agent.modelName(id) ?? `model ${id}`
  let told = false
  events.on('connected', (hw) => {
    line(
      `connected to ${origin} (${hw.cpu_cores} cores, ${(hw.memory_bytes / 2 ** 30).toFixed(1)} GiB, gpu: ${hw.gpu ?? 'none'})`,
    )
    if (told) return
    told = true
    line(
      `Choose what this node serves on My Nodes: ${origin}/nodes (edit this node, download a model, start serving it, switch the node to Active)`,
    )
  })
  events.on('disconnected', ({ code, reconnectInMs, cause }) => {
    const retry =
      reconnectInMs === null ? '' : `; retrying in ${(reconnectInMs / 1000).toFixed(1)} s`
    line(
      cause
        ? `cannot connect to ${origin}: ${cause}${retry}`
        : `disconnected from ${origin} (${code})${retry}`,
      'warn',
    )
  })
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
    line(`${name(s.node_model_id)}: ${state}${s.error_message ? ` (${s.error_message})` : ''}`)
  })
  events.on('job', (e) => {
    if (e.kind === 'started') line(`job ${e.jobId} started (${name(e.modelId)})`)
    else if (e.kind === 'done')
      line(`job ${e.jobId} done: ${e.tokensOutput} tokens in ${e.processingTimeMs} ms`)
    else if (e.kind === 'failed') line(`job ${e.jobId} failed: ${e.error}`, 'warn')
    else if (e.kind === 'cancelled') line(`job ${e.jobId} cancelled`)
    else line(`job ${e.jobId} rejected: ${e.reason}`)
  })
  events.on('model_file_removed', (id, reason) =>
    line(`${name(id)}: the file on disk is not the catalogue's (${reason}); removed`, 'warn'),
  )
  events.on('invalid_frame', (err) => line(`ignored a frame: ${err.message}`, 'warn'))
}
