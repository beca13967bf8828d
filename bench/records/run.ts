/**
 * bench/records: records API throughput and realtime fan-out on SQLite.
 * - list: the chat sidebar's filtered, sorted 50-item page of conversations (rule + filter + sort), req/s
 * - create: conversation creation, req/s
 * - realtime: 1,000 concurrent SSE subscribers, events delivered per second and delivery latency
 * Each figure is the median of several runs; the coordinator runs in its own process.
 * Run: npm run bench:records   (env: RUNS=3, DURATION=5, SUBSCRIBERS=1000)
 */
import autocannon from 'autocannon'
import { request } from 'node:http'
import { cpuSeconds, median, percentile, startCoordinator } from '../lib/coordinator-process.ts'

const runs = Number(process.env.RUNS ?? 3)
const duration = Number(process.env.DURATION ?? 5)
const subscribers = Number(process.env.SUBSCRIBERS ?? 1000)

async function api(url: string, path: string, body?: unknown, token?: string) {
  const res = await fetch(url + path, {
    method: body ? 'POST' : 'GET',
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: token } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
  return res.status === 204 ? null : res.json()
}

function load(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) =>
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result))),
  )
}

/** Opens one SSE connection and subscribes it; resolves with a function that stops it. */
function subscribe(
  url: string,
  token: string,
  topic: string,
  onEvent: (data: string, at: number) => void,
) {
  return new Promise<() => void>((resolve, reject) => {
    const req = request(url + '/api/realtime', { agent: false }, (res) => {
      let buffer = ''
      let connected = false
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const frame = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const event = /event:(.*)/.exec(frame)?.[1]
          const data = /data:(.*)/.exec(frame)?.[1] ?? ''
          if (event === 'PB_CONNECT' && !connected) {
            connected = true
            const clientId = /^id:(.*)$/m.exec(frame)![1]
            api(url, '/api/realtime', { clientId, subscriptions: [topic] }, token).then(
              () => resolve(() => req.destroy()),
              reject,
            )
          } else if (event === topic) onEvent(data, performance.now())
        }
      })
    })
    req.on('error', () => {})
    req.end()
  })
}

async function main() {
  // 1,000 streams of one user from one address: the realtime limits would refuse most of them.
  const server = await startCoordinator(18090, {
    MESHWORK_REALTIME_MAX_STREAMS_PER_ADDRESS: '0',
    MESHWORK_REALTIME_MAX_STREAMS_PER_USER: '0',
  })
  const { url } = server
  try {
    const email = `bench${Date.now()}@example.com`
    await api(url, '/api/collections/users/records', {
      email,
      password: 'password123',
      passwordConfirm: 'password123',
    })
    const auth = await api(url, '/api/collections/users/auth-with-password', {
      identity: email,
      password: 'password123',
    })
    const token: string = auth.token
    const userId: string = auth.record.id
    const models = await api(url, '/api/collections/models/records', undefined, token)
    const model: string = models.items[0].id
    for (let i = 0; i < 2000; i++) {
      await api(
        url,
        '/api/collections/conversations/records',
        { model, title: `Chat ${i % 2 ? 'about stories' : 'misc'} ${i}` },
        token,
      )
    }
    // The web app's conversation sidebar, exactly as it asks (packages/web/src/features/chat/chat-api.ts):
    // the user's conversations, newest activity first, 50 a page, no totals. Page 2, so the page
    // is full. The same list with totals (COUNT over the user's rows) is measured too.
    const filter = encodeURIComponent(`user = "${userId}"`)
    const listPath = `/api/collections/conversations/records?page=2&perPage=50&skipTotal=1&sort=-last_message_at,-created&filter=${filter}`
    const countedPath = listPath.replace('&skipTotal=1', '')
    const check = await api(url, listPath, undefined, token)
    if (check.items.length !== 50) throw new Error(`list returned ${check.items.length} items`)
    const counted = await api(url, countedPath, undefined, token)
    if (counted.totalItems !== 2000) throw new Error(`counted list total ${counted.totalItems}`)

    const listRps: number[] = []
    const createRps: number[] = []
    const listPerCpu: number[] = []
    const createPerCpu: number[] = []
    const pid = server.child.pid!
    // All list runs first, on the fixed 2,000-row data set: the create runs add rows.
    for (let r = 0; r < runs; r++) {
      const cpu = cpuSeconds(pid)
      const list = await load({
        url: url + listPath,
        connections: 20,
        duration,
        headers: { Authorization: token },
      })
      if (list.non2xx) throw new Error(`list: ${list.non2xx} non-2xx responses`)
      listRps.push(list.requests.average)
      listPerCpu.push(list.requests.total / (cpuSeconds(pid) - cpu))
      console.log(
        `  list run ${r + 1}: ${Math.round(listRps[r])} req/s (${Math.round(listPerCpu[r])}/CPU-s)`,
      )
    }
    const countedRps: number[] = []
    for (let r = 0; r < runs; r++) {
      const counted = await load({
        url: url + countedPath,
        connections: 20,
        duration,
        headers: { Authorization: token },
      })
      if (counted.non2xx) throw new Error(`counted list: ${counted.non2xx} non-2xx responses`)
      countedRps.push(counted.requests.average)
      console.log(`  list with totals run ${r + 1}: ${Math.round(countedRps[r])} req/s`)
    }
    for (let r = 0; r < runs; r++) {
      const cpu = cpuSeconds(pid)
      const create = await load({
        url: url + '/api/collections/conversations/records',
        method: 'POST',
        connections: 20,
        duration,
        headers: { Authorization: token, 'Content-Type': 'application/json' },
        body: JSON.stringify({ model, title: 'bench create' }),
      })
      if (create.non2xx) throw new Error(`create: ${create.non2xx} non-2xx responses`)
      createRps.push(create.requests.average)
      createPerCpu.push(create.requests.total / (cpuSeconds(pid) - cpu))
      console.log(
        `  create run ${r + 1}: ${Math.round(createRps[r])} req/s (${Math.round(createPerCpu[r])}/CPU-s)`,
      )
    }

    // Realtime: N subscribers on conversations/*; each created record must reach all of them.
    const sentAt = new Map<string, number>()
    const latencies: number[] = []
    let delivered = 0
    const stops: Array<() => void> = []
    for (let i = 0; i < subscribers; i += 50) {
      const batch = Array.from({ length: Math.min(50, subscribers - i) }, () =>
        subscribe(url, token, 'conversations/*', (data, at) => {
          const title = /"title":"(rt-\d+)"/.exec(data)?.[1]
          const sent = title && sentAt.get(title)
          if (sent) {
            latencies.push(at - sent)
            delivered++
          }
        }),
      )
      stops.push(...(await Promise.all(batch)))
    }
    const events = 50
    const started = performance.now()
    for (let i = 0; i < events; i++) {
      const title = `rt-${i}`
      sentAt.set(title, performance.now())
      await api(url, '/api/collections/conversations/records', { model, title }, token)
      await new Promise((r) => setTimeout(r, 20))
    }
    const deadline = Date.now() + 15_000
    while (delivered < events * subscribers && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50))
    const elapsed = (performance.now() - started) / 1000
    stops.forEach((stop) => stop())

    const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
    console.log(`bench/records on SQLite (${runs} runs x ${duration}s, 20 connections; medians)`)
    console.log(
      `  list (filtered, sorted, 50 items): ${fmt(median(listRps))} req/s   runs: ${listRps.map(fmt).join(', ')}   (goal >= 3,000)`,
    )
    console.log(
      `  same list with totals (COUNT):     ${fmt(median(countedRps))} req/s   runs: ${countedRps.map(fmt).join(', ')}`,
    )
    console.log(
      `  create (conversation):             ${fmt(median(createRps))} req/s   runs: ${createRps.map(fmt).join(', ')}`,
    )
    console.log(
      `  per CPU-second of the coordinator process (robust to other load on the machine):`,
    )
    console.log(
      `    list ${fmt(median(listPerCpu))} req/CPU-s, create ${fmt(median(createPerCpu))} req/CPU-s`,
    )
    console.log(
      `  realtime: ${subscribers} subscribers x ${events} events: delivered ${delivered} of ${events * subscribers}`,
    )
    console.log(
      `    ${fmt(delivered / elapsed)} events/s delivered; latency p50 ${median(latencies).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`,
    )
  } finally {
    await server.stop()
  }
}

await main()
