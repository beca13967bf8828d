/**
 * @module Simulated nodes for the dispatch benchmark: linked through the real flow, connected over
 * the real WebSocket, serving one model, answering each offer with a one-token job: at once, or
 * after about `answerMs` (a streamed answer's length, so that many sends are in flight while the
 * coordinator is not saturated).
 */
import WebSocket from 'ws'
import {
  NODE_PROTOCOL_VERSION,
  NODE_WS_PATH,
  nodeAuthorizationHeader,
  type ServerToNodeFrame,
} from '@meshwork/protocol'
import { Changes, WAIT_MS, api, linkNode, waitFor } from './network-client.ts'

export interface SimulatedNodes {
  /** When (performance.now) the offer for this request reached a node. */
  offered(requestId: string): Promise<number>
  stop(): Promise<void>
}

export async function startSimulatedNodes(
  url: string,
  token: string,
  modelId: string,
  count: number,
  answerMs = 0,
): Promise<SimulatedNodes> {
  const offers = new Map<string, number>()
  const changes = new Changes()
  const sockets: WebSocket[] = []
  for (let i = 0; i < count; i++) {
    const { nodeId, credential } = await linkNode(url, token, `sim ${i}`)
    const ws = new WebSocket(url.replace('http', 'ws') + NODE_WS_PATH, {
      headers: { authorization: nodeAuthorizationHeader(nodeId, credential) },
    })
    const send = (frame: unknown) => ws.send(JSON.stringify(frame))
    ws.on('message', (data) => {
      const at = performance.now()
      const frame = JSON.parse(String(data)) as ServerToNodeFrame
      if (frame.type === 'desired_state') {
        for (const m of frame.node_models) {
          send({
            type: 'model_status',
            node_model_id: m.id,
            is_downloaded: true,
            download_progress: 100,
            is_serving: m.requested_serving,
            tokens_per_second: 100 + i,
            error_message: '',
          })
        }
      } else if (frame.type === 'job_offer') {
        offers.set(frame.request_id, at)
        changes.notify()
        send({ type: 'job_accepted', job_id: frame.job_id })
        send({ type: 'job_chunk', job_id: frame.job_id, text: 'ok' })
        const done = () =>
          send({
            type: 'job_done',
            job_id: frame.job_id,
            tokens_input: 1,
            tokens_output: 1,
            processing_time_ms: Math.max(1, answerMs),
          })
        // Answers vary in length (half to one and a half times answerMs), as real ones do.
        if (answerMs > 0) setTimeout(done, answerMs * (0.5 + Math.random()))
        else done()
      }
    })
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', reject)
    })
    send({
      type: 'hello',
      protocol_version: NODE_PROTOCOL_VERSION,
      agent_version: 'sim',
      hardware: { cpu_model: 'sim', cpu_cores: 1, memory_bytes: 1, gpu: null },
      engines: [{ kind: 'llama.cpp', version: null }],
      max_jobs: 1,
    })
    const beat = setInterval(
      () =>
        ws.readyState === WebSocket.OPEN && send({ type: 'heartbeat', busy_jobs: 0, max_jobs: 1 }),
      5000,
    )
    ws.on('close', () => clearInterval(beat))
    sockets.push(ws)
    await api(
      url,
      '/api/collections/node_models/records',
      { node: nodeId, model: modelId, requested_download: true, requested_serving: true },
      token,
    )
  }
  await waitFor(async () => {
    const list = (await api(
      url,
      `/api/collections/available_models/records/${modelId}`,
      undefined,
      token,
    )) as { node_count: number }
    return list.node_count >= count
  }, 30_000)
  return {
    offered: (requestId) => changes.until(() => offers.get(requestId), WAIT_MS),
    async stop() {
      for (const ws of sockets) ws.terminate()
    },
  }
}
