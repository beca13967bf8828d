/**
 * bench/scale: one coordinator under a network's streaming load. Simulated nodes (hundreds, linked
 * through the real flow, in a process of their own: streaming-nodes.ts) stream answers at 30
 * tokens/s chunked as the agent chunks; chats are ramped (100 -> 1,000 by default), each a loop of
 * sends in one conversation watched by its own realtime stream subscribed as the web app subscribes
 * (`requests/*` filtered on the conversation, and `conversations/*`). Per step it prints delivered
 * tokens/s, p50/p99 delay from a node sending a token to the subscriber reading it, coordinator CPU
 * per 1,000 tokens delivered, memory per stream, database statements per request, and the bench's
 * own event-loop delay (it shares the machine). Stops after the first step that misses the goal
 * (p99 < 100 ms with at least 95 % of the tokens delivered).
 * Run: npm run bench:scale   (env: STEPS=100,250,500,750,1000 NODES=250 MAX_JOBS=4
 *   ANSWER_TOKENS=150 RATE=30 WARM_S=4 MEASURE_S=10 CPU_PROF=<dir> KEEP_GOING=1
 *   DATABASE_URL=postgres://… REDIS_URL=redis://… PROCESSES=2)
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import {
  cpuSeconds,
  percentile,
  startCoordinator,
  type CoordinatorProcess,
} from '../lib/coordinator-process.ts'
import { api, signUp } from '../network/network-client.ts'
import { modelMirror as mirror } from '@meshwork/test-kit'

const steps = (process.env.STEPS ?? '100,250,500,750,1000').split(',').map(Number)
const nodes = Number(process.env.NODES ?? 250)
const maxJobs = Number(process.env.MAX_JOBS ?? 4)
const answerTokens = Number(process.env.ANSWER_TOKENS ?? 150)
const rate = Number(process.env.RATE ?? 30)
const warmS = Number(process.env.WARM_S ?? 4)
const measureS = Number(process.env.MEASURE_S ?? 10)
const chatsPerUser = 10
const keepGoing = process.env.KEEP_GOING === '1'
const metricsToken = 'bench-scale-metrics-token'
const now = () => performance.timeOrigin + performance.now()
const epoch = now()

const processes = Number(process.env.PROCESSES ?? 1)
const databaseUrl = process.env.DATABASE_URL
const redisUrl = process.env.REDIS_URL
if (processes > 1 && !(databaseUrl && redisUrl))
  throw new Error('PROCESSES > 1 needs DATABASE_URL and REDIS_URL')
const run = `bench_scale_${Date.now().toString(36)}`
const shared: Record<string, string> = {
  MESHWORK_MODEL_MIRROR: mirror,
  MESHWORK_INITIAL_CREDITS: '100000000',
  MESHWORK_LINK_FLOW_LIMIT: '0',
  MESHWORK_REALTIME_MAX_STREAMS_PER_USER: '0',
  MESHWORK_REALTIME_MAX_STREAMS_PER_ADDRESS: '0',
  MESHWORK_METRICS_TOKEN: metricsToken,
  // Its own schema and Redis prefix: the database and Redis may be shared with others' tests.
  ...(databaseUrl ? { DATABASE_URL: databaseUrl, MESHWORK_DATABASE_SCHEMA: run } : {}),
  ...(redisUrl ? { REDIS_URL: redisUrl, MESHWORK_REDIS_PREFIX: run } : {}),
}
const coordinators: CoordinatorProcess[] = []
for (let i = 0; i < processes; i++) {
  coordinators.push(
    await startCoordinator(19190 + Math.floor(Math.random() * 500) + i * 500, shared, [
      ...(process.env.CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.CPU_PROF] : []),
    ]),
  )
}
const urls = coordinators.map((c) => c.url)
const url = urls[0]
const pids = coordinators.map((c) => c.child.pid!)
const sum = (f: (pid: number) => number) => pids.reduce((a, pid) => a + f(pid), 0)
let sims: ReturnType<typeof spawn> | null = null

/** What the coordinator processes hold in memory, MB. */
const rssMb = () =>
  sum(
    (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024,
  )

interface Counts {
  statements: number
  busMessages: number
  busBytes: number
}

/** Database statements and Redis messages (published) of every coordinator process so far. */
async function counts(): Promise<Counts> {
  const total: Counts = { statements: 0, busMessages: 0, busBytes: 0 }
  for (const u of urls) {
    const res = await fetch(`${u}/api/metrics`, {
      headers: { authorization: `Bearer ${metricsToken}` },
    })
    const text = await res.text()
    const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0)
    total.statements += value(/^meshwork_db_statements_total (\d+)/m)
    total.busMessages += value(/^meshwork_bus_messages_total\{direction="out"\} (\d+)/m)
    total.busBytes += value(/^meshwork_bus_bytes_total\{direction="out"\} (\d+)/m)
  }
  return total
}

/** Bytes over the node sockets so far, as the simulated nodes last reported them. */
const nodeBytes = { sent: 0, received: 0, made: 0 }

/** What the window records; null outside a measuring window. */
interface Window {
  delays: number[]
  tokens: number
  completed: number
  failed: number
  /** Bytes the realtime streams carried. */
  sseBytes: number
}
let window: Window | null = null

interface Chat {
  /** The coordinator process this chat's sends and stream go to. */
  url: string
  conversation: string
  user: { id: string; token: string }
  /** Per request id: tokens already seen. */
  seen: Map<string, number>
  waiting: Map<string, () => void>
  ended: Set<string>
  stop: () => void
}

function onRequestEvent(chat: Chat, data: string, at: number) {
  const record = (JSON.parse(data) as { record: Record<string, unknown> }).record
  const id = String(record.id)
  const response = String(record.response ?? '')
  const count = Math.floor(response.length / 7)
  const seen = chat.seen.get(id) ?? 0
  if (count < seen) chat.seen.set(id, count) // given to another node: the text starts again
  if (count > seen) {
    chat.seen.set(id, count)
    if (window) {
      window.tokens += count - seen
      for (let k = seen; k < count; k++) {
        const sentAt = epoch + parseInt(response.slice(k * 7 + 1, k * 7 + 7), 36) / 10
        window.delays.push(at - sentAt)
      }
    }
  }
  const status = record.status
  if ((status === 'completed' || status === 'failed') && !record.is_partial) {
    if (window && status === 'completed') window.completed++
    else if (window) window.failed++
    chat.seen.delete(id)
    chat.ended.add(id)
    chat.waiting.get(id)?.()
  }
}

/** One SSE stream for a chat, subscribed like the web app's chat screen. */
function watch(chat: Chat): Promise<() => void> {
  const filter = JSON.stringify({ query: { filter: `conversation = '${chat.conversation}'` } })
  const requestsKey = `requests/*?options=${encodeURIComponent(filter)}`
  return new Promise((resolve, reject) => {
    const req = request(chat.url + '/api/realtime', { agent: false }, (res) => {
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (piece: string) => {
        const at = now()
        if (window) window.sseBytes += Buffer.byteLength(piece)
        buffer += piece
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const frame = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const eventStart = frame.indexOf('event:') + 6
          const event = frame.slice(eventStart, frame.indexOf('\n', eventStart))
          const data = frame.slice(frame.indexOf('data:') + 5)
          if (event === requestsKey) onRequestEvent(chat, data, at)
          else if (event === 'PB_CONNECT') {
            const clientId = (JSON.parse(data) as { clientId: string }).clientId
            api(
              chat.url,
              '/api/realtime',
              { clientId, subscriptions: [requestsKey, 'conversations/*'] },
              chat.user.token,
            ).then(() => resolve(() => req.destroy()), reject)
          }
        }
      })
    })
    req.on('error', reject)
    req.end()
  })
}

const chats: Chat[] = []
const loops: Promise<void>[] = []
let running = true

async function chatLoop(chat: Chat, delayMs: number, modelId: string) {
  await new Promise((r) => setTimeout(r, delayMs))
  let turn = 0
  while (running) {
    const sent = (await api(
      chat.url,
      '/api/chat/send',
      {
        conversation_id: chat.conversation,
        model_id: modelId,
        prompt: `Tell me story number ${turn++}.`,
        temperature: 0,
      },
      chat.user.token,
    ).catch((err: Error) => {
      if (running) console.error('send failed:', err.message)
      return null
    })) as { request_id: string } | null
    if (!sent) {
      await new Promise((r) => setTimeout(r, 1000))
      continue
    }
    if (!running) break
    if (!chat.ended.has(sent.request_id)) {
      await new Promise<void>((resolve) => chat.waiting.set(sent.request_id, resolve))
    }
    chat.waiting.delete(sent.request_id)
    chat.ended.delete(sent.request_id)
  }
}

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

try {
  const owner = await signUp(url, 'owner')
  const models = (await api(
    url,
    '/api/collections/models/records?perPage=50',
    undefined,
    owner.token,
  )) as {
    items: { id: string; name: string }[]
  }
  const modelId = models.items.find((m) => m.name === 'llama-2-tiny-random')!.id
  const setupStart = Date.now()
  sims = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(new URL('./streaming-nodes.ts', import.meta.url)),
      JSON.stringify({
        urls,
        token: owner.token,
        modelId,
        nodes,
        maxJobs,
        answerTokens,
        rate,
        epoch,
      }),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  await new Promise<void>((resolve, reject) => {
    sims!.stdout!.on('data', (d: Buffer) => {
      const text = String(d)
      const last = [...text.matchAll(/bytes (\d+) (\d+) (\d+)/g)].pop()
      if (last) {
        Object.assign(nodeBytes, { sent: +last[1], received: +last[2], made: +last[3] })
      }
      if (text.includes('ready')) resolve()
    })
    sims!.once('exit', (code) => reject(new Error(`simulated nodes exited (${code})`)))
  })
  const userCount = Math.ceil(Math.max(...steps) / chatsPerUser)
  const users: { id: string; token: string }[] = []
  for (let i = 0; i < userCount; i += 8) {
    users.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(8, userCount - i) }, (_, j) => signUp(url, `u${i + j}`)),
      )),
    )
  }
  console.log(
    `bench:scale: ${nodes} simulated nodes x ${maxJobs} jobs, ${rate} tokens/s per answer of ` +
      `${answerTokens} tokens (the agent's 20 ms chunking), ${userCount} users with up to ` +
      `${chatsPerUser} chats each, one realtime stream per chat; set up in ` +
      `${((Date.now() - setupStart) / 1000).toFixed(0)} s; load ${load()}`,
  )
  const rssBase = rssMb()
  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  for (const target of steps) {
    const added = target - chats.length
    const spreadMs = Math.min(5000, (answerTokens / rate) * 1000)
    for (let i = 0; i < added; i++) {
      const user = users[chats.length % users.length]
      const c = (await api(
        url,
        '/api/collections/conversations/records',
        { title: 'scale', user: user.id },
        user.token,
      )) as {
        id: string
      }
      const chat: Chat = {
        url: urls[chats.length % urls.length],
        conversation: c.id,
        user,
        seen: new Map(),
        waiting: new Map(),
        ended: new Set(),
        stop: () => {},
      }
      chat.stop = await watch(chat)
      chats.push(chat)
      loops.push(chatLoop(chat, Math.random() * spreadMs, modelId))
    }
    await new Promise((r) => setTimeout(r, spreadMs + warmS * 1000))
    const loadAtStart = load()
    const countsBefore = await counts()
    const nodesBefore = { ...nodeBytes }
    const cpuBefore = sum(cpuSeconds)
    const benchCpuBefore = process.cpuUsage()
    lag.reset()
    window = { delays: [], tokens: 0, completed: 0, failed: 0, sseBytes: 0 }
    const started = now()
    await new Promise((r) => setTimeout(r, measureS * 1000))
    const w = window
    window = null
    const seconds = (now() - started) / 1000
    const cpu = sum(cpuSeconds) - cpuBefore
    const benchCpu = process.cpuUsage(benchCpuBefore)
    const countsAfter = await counts()
    const rss = rssMb()
    const p50 = percentile(w.delays, 50)
    const p99 = percentile(w.delays, 99)
    const tps = w.tokens / seconds
    const made = nodeBytes.made - nodesBefore.made
    const perRequest = (n: number) => (n / Math.max(1, w.completed)).toFixed(1)
    const met = p99 < 100 && w.tokens >= 0.95 * made && w.failed === 0
    console.log(
      `${String(target).padStart(5)} chats: ${tps.toFixed(0).padStart(6)} tokens/s delivered ` +
        `(${((w.tokens / made) * 100).toFixed(0)} % of those the nodes made), delay p50 ` +
        `${p50.toFixed(1)} ms p99 ${p99.toFixed(1)} ms; coordinator${processes > 1 ? 's' : ''} ` +
        `${((cpu / seconds) * 100).toFixed(0)} % of a core = ` +
        `${((cpu * 1000 * 1000) / w.tokens).toFixed(1)} ms CPU per 1,000 tokens, ` +
        `${(((rss - rssBase) * 1024) / target).toFixed(0)} kB per stream (RSS ${rss.toFixed(0)} MB); ` +
        `per request (${w.completed} completed, ${w.failed} failed): ` +
        `${perRequest(countsAfter.statements - countsBefore.statements)} statements, ` +
        (redisUrl
          ? `${perRequest(countsAfter.busMessages - countsBefore.busMessages)} Redis messages ` +
            `(${perRequest((countsAfter.busBytes - countsBefore.busBytes) / 1024)} kB), `
          : '') +
        `${perRequest(w.sseBytes / 1024)} kB to its realtime stream, ` +
        `${perRequest((nodeBytes.sent - nodesBefore.sent) / 1024)} kB from its node and ` +
        `${perRequest((nodeBytes.received - nodesBefore.received) / 1024)} kB to it; bench ` +
        `${(((benchCpu.user + benchCpu.system) / 1e6 / seconds) * 100).toFixed(0)} % of a core, ` +
        `its loop delay p99 ${(lag.percentile(99) / 1e6).toFixed(0)} ms; load ${loadAtStart} -> ` +
        `${load()} ${met ? 'GOAL MET' : 'goal missed'}`,
    )
    if (!met && !keepGoing) break
  }
} finally {
  running = false
  for (const c of chats) c.stop()
  for (const c of chats) for (const done of c.waiting.values()) done()
  // Sends still on their way finish before the coordinators stop (no errors from the shutdown).
  await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, 5000))])
  sims?.kill('SIGTERM')
  for (const c of coordinators) await c.stop()
  if (databaseUrl) await dropSchema(databaseUrl, run)
}
process.exit(0)

async function dropSchema(url: string, schema: string) {
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  } finally {
    await client.end()
  }
}
