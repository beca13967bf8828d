/**
 * bench/network: what the coordinator's network path costs, on one machine, one model
 * (stories260K from ../shared/models) and one thread count (1) for both sides.
 * - throughput ratio: streaming tokens/s a realtime subscriber receives through the coordinator
 *   (node agent -> WebSocket -> scheduler -> SSE), divided by the tokens/s of the same engine
 *   called directly; both measured from the first token to the end of the answer
 * - added time to first token: (send -> first partial event) minus (call -> first token), p50
 * - dispatch latency with 50 simulated nodes: POST /api/chat/send -> job_offer at a node, p50/p99
 * Run: npm run network -w @meshwork/bench   (env: RUNS=10, DISPATCHES=100, SIM_NODES=50)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createLlamaEngine, startAgent } from '@meshwork/node'
import { median, percentile, startCoordinator } from '../lib/coordinator-process.ts'
import { api, linkNode, signUp, subscribe, waitFor } from './network-client.ts'
import { startSimulatedNodes } from './simulated-nodes.ts'

const runs = Number(process.env.RUNS ?? 10)
const dispatches = Number(process.env.DISPATCHES ?? 100)
const simNodes = Number(process.env.SIM_NODES ?? 50)
const mirror = fileURLToPath(new URL('../../../shared/models/', import.meta.url))
const prompt = 'Once upon a time, there was a little girl who'
const sampling = {
  temperature: 0.7,
  top_p: 0.9,
  top_k: 40,
  repeat_penalty: 1.1,
  frequency_penalty: 0,
  presence_penalty: 0,
  max_tokens: 256,
  context_length: 8000,
}

const coordinator = await startCoordinator(18190 + Math.floor(Math.random() * 500), {
  MESHWORK_MODEL_MIRROR: mirror,
  MESHWORK_INITIAL_CREDITS: '100000000',
})
const home = mkdtempSync(join(tmpdir(), 'meshwork-bench-node-'))
const url = coordinator.url
try {
  // --- the engine called directly ---
  const engine = createLlamaEngine({ threads: 1, gpu: false })
  const model = await engine.load({
    id: 'direct',
    name: 'stories260K',
    path: join(mirror, 'stories260K.gguf'),
  })
  const direct = { tps: [] as number[], ttft: [] as number[] }
  for (let i = 0; i < runs + 1; i++) {
    const start = performance.now()
    let first = 0
    const result = await model.generate(
      { messages: [{ role: 'user', content: prompt }], sampling },
      { onText: () => (first ||= performance.now()) },
    )
    const end = performance.now()
    if (i === 0) continue // warm-up
    direct.ttft.push(first - start)
    direct.tps.push((result.tokensOutput - 1) / ((end - first) / 1000))
  }
  await engine.dispose()

  // --- the same engine behind the coordinator ---
  const owner = await signUp(url, 'owner')
  const node = await linkNode(url, owner.token, 'bench node')
  const agent = await startAgent({
    server: url,
    nodeId: node.nodeId,
    credential: node.credential,
    home,
    threads: 1,
    gpu: false,
  })
  const models = (await api(
    url,
    '/api/collections/models/records?perPage=50',
    undefined,
    owner.token,
  )) as { items: { id: string; name: string }[] }
  const stories = models.items.find((m) => m.name === 'stories260K')!.id
  const tiny = models.items.find((m) => m.name === 'llama-2-tiny-random')!.id
  const nm = (await api(
    url,
    '/api/collections/node_models/records',
    { node: node.nodeId, model: stories, requested_download: true, requested_serving: true },
    owner.token,
  )) as { id: string }
  await waitFor(
    async () =>
      (
        (await api(
          url,
          `/api/collections/node_models/records/${nm.id}`,
          undefined,
          owner.token,
        )) as { is_serving: boolean }
      ).is_serving,
    60_000,
  )

  const user = await signUp(url, 'reader')
  const events: { at: number; record: Record<string, unknown> }[] = []
  const stop = await subscribe(url, user.token, 'requests/*', (data, at) =>
    events.push({ at, record: (JSON.parse(data) as { record: Record<string, unknown> }).record }),
  )
  const network = {
    tps: [] as number[],
    ttft: [] as number[],
    answered: [] as number[],
    started: [] as number[],
    agentTps: [] as number[],
  }
  let startedAt = 0
  agent.events.on('job', (e) => {
    if (e.kind === 'started') startedAt = performance.now()
  })
  for (let i = 0; i < runs + 1; i++) {
    events.length = 0
    // A fresh conversation each time: the prompt carries no history.
    const conv = (await api(
      url,
      '/api/collections/conversations/records',
      { title: 'bench', user: user.id },
      user.token,
    )) as { id: string }
    const start = performance.now()
    const sent = (await api(
      url,
      '/api/chat/send',
      { conversation_id: conv.id, model_id: stories, prompt, temperature: 0.7 },
      user.token,
    )) as { request_id: string }
    network.answered.push(performance.now() - start)
    const done = await waitFor(
      () => events.find((e) => e.record.id === sent.request_id && e.record.status === 'completed'),
      30_000,
    )
    const first = events.find((e) => e.record.id === sent.request_id && e.record.response)!
    if (i === 0) continue
    network.started.push(startedAt - start)
    network.ttft.push(first.at - start)
    // The whole answer arrives as the last partial event, before the completed record.
    const whole =
      events.find(
        (e) => e.record.id === sent.request_id && e.record.response === done.record.response,
      ) ?? done
    network.tps.push((Number(done.record.tokens_output) - 1) / ((whole.at - first.at) / 1000))
    network.agentTps.push(
      Number(done.record.tokens_output) / (Number(done.record.processing_time_ms) / 1000),
    )
  }
  stop()
  await agent.stop()

  // --- dispatch latency with simulated nodes ---
  const sims = await startSimulatedNodes(url, owner.token, tiny, simNodes)
  const dispatchMs: number[] = []
  for (let i = 0; i < dispatches; i++) {
    const c = (await api(
      url,
      '/api/collections/conversations/records',
      { title: 'd', user: user.id },
      user.token,
    )) as { id: string }
    const start = performance.now()
    const sent = (await api(
      url,
      '/api/chat/send',
      { conversation_id: c.id, model_id: tiny, prompt: 'hi' },
      user.token,
    )) as { request_id: string }
    const offeredAt = await sims.offered(sent.request_id)
    dispatchMs.push(offeredAt - start)
  }
  await sims.stop()

  const ratio = median(network.tps) / median(direct.tps)
  const added = median(network.ttft) - median(direct.ttft)
  console.log(
    `engine direct:        ${median(direct.tps).toFixed(0)} tokens/s, first token ${median(direct.ttft).toFixed(1)} ms (p50 of ${runs})`,
  )
  console.log(
    `through coordinator:  ${median(network.tps).toFixed(0)} tokens/s, first token ${median(network.ttft).toFixed(1)} ms (p50 of ${runs})`,
  )
  console.log(
    `inside the node agent: ${median(network.agentTps).toFixed(0)} tokens/s (tokens_output / processing_time_ms)`,
  )
  console.log(
    `send answered after:  ${median(network.answered).toFixed(1)} ms p50; job started on the node after ${median(network.started).toFixed(1)} ms`,
  )
  console.log(`throughput ratio:     ${ratio.toFixed(3)} (goal >= 0.95)`)
  console.log(`added first-token:    ${added.toFixed(1)} ms p50 (goal <= 20 ms)`)
  console.log(
    `dispatch, ${simNodes} nodes:  p50 ${percentile(dispatchMs, 50).toFixed(1)} ms, p99 ${percentile(dispatchMs, 99).toFixed(1)} ms (${dispatches} sends)`,
  )
} finally {
  await coordinator.stop()
  rmSync(home, { recursive: true, force: true })
}
process.exit(0)
