/**
 * bench/network: what the coordinator's network path costs, on one machine, one model
 * (stories260K from ../shared/models), one thread count (1) and the same sampling on both sides
 * (temperature 0, so both paths generate the same text and the same number of tokens).
 * - throughput ratio: tokens/s a realtime subscriber receives through the coordinator
 *   (send -> completed event; node agent -> WebSocket -> scheduler -> SSE), divided by tokens/s of
 *   the same engine called directly (call -> end); also the streaming rate (first -> last token)
 * - added time to first token: (send -> first non-empty partial event) minus (call -> first
 *   token), p50 and p99
 * - the same two figures for the OpenAI-compatible path: a streamed `/v1/chat/completions` with an
 *   API key (call -> first content chunk, call -> end of the stream), in the same run
 * - dispatch with 50 simulated nodes: POST /api/chat/send -> job_offer at a node, p50/p99, one
 *   send at a time and 16 in flight, and completed requests per second
 * Direct, web and `/v1` generations alternate, so machine noise hits them alike.
 * Run: npm run bench:network   (env: RUNS=10, DISPATCHES=200, SIM_NODES=50, CONCURRENCY=16;
 * RUNS=0 measures dispatch only; CPU_PROF=<dir> writes the coordinator's CPU profile there;
 * ANSWER_MS=2000 makes each simulated node take about that long (half to one and a half times)
 * to finish an answer, and the senders start spread over that time, so that CONCURRENCY sends
 * are in flight because answers take time, as on a real network, rather than because the
 * coordinator is saturated; SIM_NODES must then be at least CONCURRENCY)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { cpuSeconds, percentile, startCoordinator } from '../lib/coordinator-process.ts'
import { measureGeneration } from './generation-phase.ts'
import { measureDispatch, type DispatchSample } from './measure-dispatch.ts'
import { api, signUp } from './network-client.ts'
import { startSimulatedNodes } from './simulated-nodes.ts'
import { modelMirror as mirror } from '@meshwork/test-kit'

const runs = Number(process.env.RUNS ?? 10)
const dispatches = Number(process.env.DISPATCHES ?? 200)
const simNodes = Number(process.env.SIM_NODES ?? 50)
const concurrency = Number(process.env.CONCURRENCY ?? 16)
const answerMs = Number(process.env.ANSWER_MS ?? 0)
// With long answers, one send at a time takes answerMs each: a few are enough.
const sequentialSends = Math.min(dispatches, answerMs > 0 ? 20 : dispatches)
const coordinator = await startCoordinator(
  18190 + Math.floor(Math.random() * 500),
  {
    MESHWORK_MODEL_MIRROR: mirror,
    MESHWORK_INITIAL_CREDITS: '100000000',
    // 50 simulated nodes link from this one address.
    MESHWORK_LINK_FLOW_LIMIT: '0',
    MESHWORK_API_KEY_RATE_LIMIT: '0',
    MESHWORK_API_USER_RATE_LIMIT: '0',
  },
  process.env.CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.CPU_PROF] : [],
)
const home = mkdtempSync(join(tmpdir(), 'meshwork-bench-node-'))
const url = coordinator.url
try {
  const owner = await signUp(url, 'owner')
  const models = (await api(
    url,
    '/api/collections/models/records?perPage=50',
    undefined,
    owner.token,
  )) as { items: { id: string; name: string }[] }
  const stories = models.items.find((m) => m.name === 'stories260K')!.id
  const tiny = models.items.find((m) => m.name === 'llama-2-tiny-random')!.id
  if (runs > 0)
    await measureGeneration({
      url,
      owner,
      stories,
      mirror,
      home,
      runs,
      coordinatorPid: coordinator.child.pid!,
    })
  const user = await signUp(url, 'dispatcher')
  const sims = await startSimulatedNodes(url, owner.token, tiny, simNodes, answerMs)
  const dispatch = await measureDispatch(
    url,
    user,
    tiny,
    sims,
    dispatches,
    concurrency,
    sequentialSends,
    // Senders start spread over one answer's length: a network's sends do not all arrive at once.
    answerMs,
    () => cpuSeconds(coordinator.child.pid!),
  )
  await sims.stop()

  const p = (xs: number[], q: number) => percentile(xs, q).toFixed(1)
  const phase = (label: string, xs: DispatchSample[]) => {
    const k = (key: keyof DispatchSample) => xs.map((x) => x[key])
    console.log(
      `dispatch, ${simNodes} nodes${answerMs ? `, answers of ${answerMs / 2}-${(answerMs * 3) / 2} ms` : ''}, ${label}: job_offer p50 ${p(k('offered'), 50)} ms p99 ` +
        `${p(k('offered'), 99)} ms (send answered p50 ${p(k('answered'), 50)} ms p99 ` +
        `${p(k('answered'), 99)} ms; completed p50 ${p(k('completed'), 50)} ms)`,
    )
  }
  phase('one at a time', dispatch.sequential)
  phase(`${concurrency} in flight`, dispatch.concurrent)
  console.log(
    `completed with ${concurrency} in flight: ${dispatch.requestsPerSecond.toFixed(0)} requests/s ` +
      `(${dispatches} sends per phase), coordinator CPU ${dispatch.cpuPerRequestMs.toFixed(2)} ms ` +
      `per request; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  )
} finally {
  await coordinator.stop()
  rmSync(home, { recursive: true, force: true })
}
process.exit(0)
