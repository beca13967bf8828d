/**
 * @module Simulated nodes that stream like real ones, run in a process of their own (so their
 * frames are not held up by the subscribers' parsing): linked through the real flow, connected over
 * the real WebSocket, each token made at `RATE` tokens/s and sent as the agent's ChunkBatcher
 * sends it (at once when its last frame left 20 ms ago or more, else at that interval's end: one
 * frame per token at 30 tokens/s). Every token's text is the time
 * it was sent (7 characters: a space and 6 base-36 digits of tenths of a millisecond since the
 * epoch the parent gives), so a subscriber reads each token's delay from the text alone.
 * Protocol on stdio: argv JSON in, one line `ready` out once every node serves the model.
 */
import WebSocket from 'ws'
import {
  NODE_PROTOCOL_VERSION,
  NODE_WS_PATH,
  nodeAuthorizationHeader,
  type ServerToNodeFrame,
} from '@meshwork/protocol'
import { api, linkNode, waitFor } from '../network/network-client.ts'

interface Options {
  /** Node i connects to urls[i % urls.length] (coordinator processes). */
  urls: string[]
  token: string
  modelId: string
  nodes: number
  maxJobs: number
  answerTokens: number
  rate: number
  /** performance.timeOrigin-based ms that token stamps count from. */
  epoch: number
}

const o = JSON.parse(process.argv[2]) as Options
const now = () => performance.timeOrigin + performance.now()
const stamp = () =>
  ' ' +
  Math.round((now() - o.epoch) * 10)
    .toString(36)
    .padStart(6, '0')

interface Job {
  id: string
  send: (frame: unknown) => void
  left: number
  /** When the next token is made. */
  due: number
  /** Tokens made but not yet sent (the batcher's pending text) and when they go. */
  pending: string
  flushAt: number
  /** When its last frame went out. */
  lastSent: number
}

const jobs = new Map<string, Job>()
/** Bytes over the node sockets, both ways (the parent reads them from stdout). */
const bytes = { sent: 0, received: 0 }
let made = 0
setInterval(() => console.log(`bytes ${bytes.sent} ${bytes.received} ${made}`), 250).unref()
const tokenMs = 1000 / o.rate
const batchMs = 20

// One timer walks every job (as many timers as jobs would cost more than the jobs).
setInterval(() => {
  const t = now()
  for (const job of jobs.values()) {
    while (job.left > 0 && job.due <= t) {
      job.left--
      made++
      job.due += tokenMs
      job.pending += stamp()
      if (job.flushAt === Infinity) job.flushAt = Math.max(t, job.lastSent + batchMs)
    }
    if (job.pending && job.flushAt <= t) {
      job.send({ type: 'job_chunk', job_id: job.id, text: job.pending })
      job.pending = ''
      job.flushAt = Infinity
      job.lastSent = t
    }
    if (job.left === 0 && !job.pending) {
      jobs.delete(job.id)
      job.send({
        type: 'job_done',
        job_id: job.id,
        tokens_input: 10,
        tokens_output: o.answerTokens,
        processing_time_ms: Math.round(o.answerTokens * tokenMs),
      })
    }
  }
}, 2)

const sockets: WebSocket[] = []
for (let i = 0; i < o.nodes; i++) {
  const url = o.urls[i % o.urls.length]
  const { nodeId, credential } = await linkNode(url, o.token, `scale ${i}`)
  const ws = new WebSocket(url.replace('http', 'ws') + NODE_WS_PATH, {
    headers: { authorization: nodeAuthorizationHeader(nodeId, credential) },
  })
  const send = (frame: unknown) => {
    if (ws.readyState !== WebSocket.OPEN) return
    const text = JSON.stringify(frame)
    bytes.sent += text.length
    ws.send(text)
  }
  ws.on('message', (data) => {
    const text = String(data)
    bytes.received += text.length
    const frame = JSON.parse(text) as ServerToNodeFrame
    if (frame.type === 'desired_state') {
      for (const m of frame.node_models) {
        send({
          type: 'model_status',
          node_model_id: m.id,
          is_downloaded: true,
          download_progress: 100,
          is_serving: m.requested_serving,
          tokens_per_second: o.rate,
          error_message: '',
        })
      }
    } else if (frame.type === 'job_offer') {
      send({ type: 'job_accepted', job_id: frame.job_id })
      jobs.set(frame.job_id, {
        id: frame.job_id,
        send,
        left: Math.min(o.answerTokens, frame.sampling.max_tokens),
        due: now(),
        pending: '',
        flushAt: Infinity,
        lastSent: -Infinity,
      })
    } else if (frame.type === 'job_cancel') {
      jobs.delete(frame.job_id)
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
    max_jobs: o.maxJobs,
  })
  const beat = setInterval(() => {
    let busy = 0
    for (const j of jobs.values()) if (j.send === send) busy++
    send({ type: 'heartbeat', busy_jobs: busy, max_jobs: o.maxJobs })
  }, 5000)
  ws.on('close', () => clearInterval(beat))
  sockets.push(ws)
  await api(
    url,
    '/api/collections/node_models/records',
    { node: nodeId, model: o.modelId, requested_download: true, requested_serving: true },
    o.token,
  )
}
await waitFor(
  async () => {
    const m = (await api(
      o.urls[0],
      `/api/collections/available_models/records/${o.modelId}`,
      undefined,
      o.token,
    )) as { node_count: number }
    return m.node_count >= o.nodes
  },
  60_000,
  200,
)
console.log('ready')
process.on('SIGTERM', () => {
  for (const ws of sockets) ws.terminate()
  process.exit(0)
})
