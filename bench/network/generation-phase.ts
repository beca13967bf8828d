/**
 * @module The generation phase of bench/network: one real node agent serving stories260K (in a
 * process of its own, as a real node is: agent-process.ts), the engine called directly, the web path (send -> SSE subscriber) and the `/v1` stream, alternating;
 * prints throughput ratios and the added time to first token.
 */
import { fork } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { median, percentile } from '../lib/coordinator-process.ts'
import { openDirectEngine, type GenerationSample } from './measure-direct.ts'
import { openNetworkPath, type NetworkSample } from './measure-network.ts'
import { openOpenAiPath } from './measure-openai.ts'
import { api, linkNode, signUp, waitFor } from './network-client.ts'
import { greedySampling } from '../lib/sampling.ts'

const prompt = 'Once upon a time, there was a little girl who'
const sampling = greedySampling

export async function measureGeneration(opts: {
  url: string
  owner: { id: string; token: string }
  stories: string
  mirror: string
  home: string
  runs: number
  coordinatorPid: number
}): Promise<void> {
  const { url, owner, stories, mirror, home, runs } = opts
  const node = await linkNode(url, owner.token, 'bench node')
  // In a process of its own, as a real node is (agent-process.ts).
  const agent = fork(
    new URL('./agent-process.ts', import.meta.url).pathname,
    [
      JSON.stringify({
        server: url,
        nodeId: node.nodeId,
        credential: node.credential,
        home,
        threads: 1,
        gpu: false,
      }),
    ],
    { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
  )
  await new Promise<void>((resolve, reject) => {
    agent.once('message', () => resolve())
    agent.once('exit', (code) => reject(new Error(`the node agent exited (${code})`)))
  })
  const nm = (await api(
    url,
    '/api/collections/node_models/records',
    { node: node.nodeId, model: stories, requested_download: true, requested_serving: true },
    owner.token,
  )) as { id: string }
  const nmPath = `/api/collections/node_models/records/${nm.id}`
  await waitFor(
    async () =>
      ((await api(url, nmPath, undefined, owner.token)) as { is_serving: boolean }).is_serving,
    60_000,
  )

  const user = await signUp(url, 'reader')
  const direct = await openDirectEngine(mirror, [{ role: 'user', content: prompt }], sampling)
  let jobStartedAt = 0
  // The agent's monotonic clock, read on this process's performance.now() scale.
  const hrtimeOffset = Number(process.hrtime.bigint()) / 1e6 - performance.now()
  agent.on('message', (m: { started?: number }) => {
    if (m.started) jobStartedAt = m.started - hrtimeOffset
  })
  const network = await openNetworkPath(
    url,
    user,
    stories,
    prompt,
    sampling.temperature,
    () => jobStartedAt,
    () => processCpuMs(opts.coordinatorPid),
  )
  const { key } = (await api(url, '/api/keys', { name: 'bench' }, user.token)) as { key: string }
  const v1 = openOpenAiPath(
    url,
    key,
    'stories260K',
    prompt,
    sampling.temperature,
    sampling.max_tokens,
  )
  const d: GenerationSample[] = []
  const n: NetworkSample[] = []
  const o: Array<GenerationSample & { chunks: number }> = []
  for (let i = 0; i < runs + 1; i++) {
    const a = await direct.generate()
    const b = await network.generate()
    const c = await v1.generate()
    if (i === 0) continue // warm-up
    d.push(a)
    n.push(b)
    o.push(c)
  }
  network.close()
  await direct.dispose()
  await new Promise((resolve) => {
    agent.once('exit', resolve)
    agent.send('stop')
  })

  const p = (xs: number[], q: number) => percentile(xs, q).toFixed(1)
  const col = <K extends keyof GenerationSample>(xs: GenerationSample[], k: K) =>
    xs.map((x) => x[k])
  const ratio = median(col(n, 'tps')) / median(col(d, 'tps'))
  const streamRatio = median(col(n, 'streamTps')) / median(col(d, 'streamTps'))
  const added50 = percentile(col(n, 'ttft'), 50) - percentile(col(d, 'ttft'), 50)
  const added99 = percentile(col(n, 'ttft'), 99) - percentile(col(d, 'ttft'), 99)
  const line = (label: string, xs: GenerationSample[]) =>
    `${label}${median(col(xs, 'tps')).toFixed(0)} tokens/s end to end, ` +
    `${median(col(xs, 'streamTps')).toFixed(0)} tokens/s streaming, first token p50 ` +
    `${p(col(xs, 'ttft'), 50)} ms p99 ${p(col(xs, 'ttft'), 99)} ms, ` +
    `${median(col(xs, 'tokensInput'))} in / ${median(col(xs, 'tokensOutput'))} out tokens`
  console.log(`stories260K, 1 thread, temperature 0, ${runs} runs each (medians)`)
  console.log(line('engine direct:          ', d))
  console.log(line('through the coordinator: ', n))
  console.log(line('/v1 stream (API key):   ', o))
  const agentTps = median(n.map((x) => x.agentTps))
  console.log(
    `inside the node agent:   ${agentTps.toFixed(0)} tokens/s (tokens_output / processing_time_ms)`,
  )
  const cpu = median(n.map((x) => x.coordinatorCpu))
  const wall = median(n.map((x) => (x.tokensOutput / x.tps) * 1000))
  console.log(
    `coordinator CPU:         ${cpu.toFixed(0)} ms per answer of ${wall.toFixed(0)} ms ` +
      `(${((cpu / wall) * 100).toFixed(0)} % of a core)`,
  )
  console.log(
    `partial events per answer: ${median(n.map((x) => x.partials))} (coalesced, one per 50 ms)`,
  )
  const ms = (k: 'answered' | 'started' | 'firstEvent') => median(n.map((x) => x[k])).toFixed(1)
  console.log(
    `network first token, p50 from the send: send answered ${ms('answered')} ms, job started on ` +
      `the node ${ms('started')} ms, processing event ${ms('firstEvent')} ms, first text ${p(col(n, 'ttft'), 50)} ms`,
  )
  console.log(
    `throughput ratio:        ${ratio.toFixed(3)} end to end (goal >= 0.95); streaming ${streamRatio.toFixed(3)}`,
  )
  const v1Ratio = median(col(o, 'tps')) / median(col(d, 'tps'))
  const v1StreamRatio = median(col(o, 'streamTps')) / median(col(d, 'streamTps'))
  const v1Added50 = percentile(col(o, 'ttft'), 50) - percentile(col(d, 'ttft'), 50)
  const v1Added99 = percentile(col(o, 'ttft'), 99) - percentile(col(d, 'ttft'), 99)
  console.log(
    `/v1 against the engine:  ratio ${v1Ratio.toFixed(3)} end to end, streaming ${v1StreamRatio.toFixed(3)}; ` +
      `added first token p50 ${v1Added50.toFixed(1)} ms, p99 ${v1Added99.toFixed(1)} ms; ` +
      `${median(o.map((x) => x.chunks))} content chunks per answer`,
  )
  // The cost the path adds per token, and what it would leave of a model making 30 tokens/s.
  const perToken = 1000 / median(col(n, 'streamTps')) - 1000 / median(col(d, 'streamTps'))
  console.log(
    `added per token:         ${perToken.toFixed(3)} ms (streaming); ratio it implies at 30 tokens/s: ` +
      `${(1000 / 30 / (1000 / 30 + perToken)).toFixed(3)}`,
  )
  console.log(
    `added first token:       p50 ${added50.toFixed(1)} ms (goal <= 2 ms, issue 12 item 4), p99 ${added99.toFixed(1)} ms`,
  )
  // Where the extra time of a whole answer goes: the first token, then the rest of the stream.
  const answerMs = (xs: GenerationSample[]) =>
    median(xs.map((x) => (x.tokensOutput / x.tps) * 1000))
  const extra = answerMs(n) - answerMs(d)
  console.log(
    `extra time per answer:   ${extra.toFixed(1)} ms of ${answerMs(d).toFixed(1)} ms ` +
      `(first token ${added50.toFixed(1)} ms, the rest ${(extra - added50).toFixed(1)} ms); ` +
      `a 0.95 ratio allows ${(answerMs(d) / 0.95 - answerMs(d)).toFixed(1)} ms`,
  )
}

/** user + system CPU time of a process, ms, from /proc (Linux); NaN elsewhere. */
function processCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return NaN
  }
}
