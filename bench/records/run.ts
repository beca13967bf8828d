/**
 * bench/records: records API throughput and realtime fan-out on SQLite.
 * - list: the chat sidebar's filtered, sorted 50-item page of conversations (rule + filter + sort), req/s
 * - create: conversation creation, req/s
 * - realtime: 1,000 concurrent SSE subscribers, events delivered per second and delivery latency
 * - ceiling: the owner-ruled list (with totals, with skipTotal) and getOne against a bare
 *   node:http + better-sqlite3 server on the same database file (bare-records.ts, its own
 *   process) answering the same JSON, measured alternately at 10 and 100 connections: the
 *   coordinator's share of that ceiling (goal >= 0.7)
 * Each figure is the median of several runs; the coordinator runs in its own process.
 * Run: npm run bench:records   (env: RUNS=3, DURATION=5, SUBSCRIBERS=1000, PARTS=list,create,realtime,ceiling,
 * CEILING_PER_PAGE=20, CEILING_ONLY=<shape>, CLIENT_PROCS=min(4, cores), CPU_PROF=<dir> for a profile of the coordinator)
 */
import autocannon from 'autocannon'
import { fork, spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { availableParallelism } from 'node:os'
import { cpuSeconds, median, percentile, startCoordinator } from '../lib/coordinator-process.ts'

const runs = Number(process.env.RUNS ?? 3)
const duration = Number(process.env.DURATION ?? 5)
const subscribers = Number(process.env.SUBSCRIBERS ?? 1000)
/** Which parts to run (comma-separated): list, create, realtime, ceiling. */
const parts = new Set((process.env.PARTS ?? 'list,create,realtime,ceiling').split(','))
const ceilingPerPage = Number(process.env.CEILING_PER_PAGE ?? 20)
/** Only the shapes whose name contains this (e.g. `getOne`, for a profile of one call). */
const ceilingOnly = process.env.CEILING_ONLY ?? ''
const clientProcs = Number(process.env.CLIENT_PROCS ?? Math.min(4, availableParallelism()))
const events = 50

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

/**
 * Opens `subscribers` streams across the client processes, creates `events` records 20 ms apart
 * and waits for every stream to get each one; latency is from the create call to each arrival.
 */
async function fanOut(url: string, token: string, model: string, pid: number) {
  const children = Array.from({ length: clientProcs }, (_, i) => {
    const child = fork(fileURLToPath(new URL('./sse-clients.ts', import.meta.url)), {
      execArgv: ['--import', 'tsx'],
    })
    const count = Math.floor(subscribers / clientProcs) + (i < subscribers % clientProcs ? 1 : 0)
    return { child, count }
  })
  const answer = (child: ChildProcess, kind: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const on = (m: Record<string, unknown>) => {
        if (m.kind === kind) resolve(m)
        else if (m.kind === 'failed') reject(new Error(String(m.message)))
        else return
        child.off('message', on)
      }
      child.on('message', on)
    })
  try {
    await Promise.all(
      children.map(({ child, count }) => {
        const ready = answer(child, 'ready')
        child.send({ kind: 'start', url, token, topic: 'conversations/*', count })
        return ready
      }),
    )
    const sentAt: number[] = []
    const cpu = cpuSeconds(pid)
    const started = performance.now()
    for (let i = 0; i < events; i++) {
      sentAt[i] = performance.timeOrigin + performance.now()
      await api(url, '/api/collections/conversations/records', { model, title: `rt-${i}` }, token)
      await new Promise((r) => setTimeout(r, 20))
    }
    // Every stream counted by its child: wait until the coordinator has gone quiet (its CPU
    // time stops growing) or 15 s passed, then collect.
    const deadline = Date.now() + 15_000
    let last = -1
    for (;;) {
      await new Promise((r) => setTimeout(r, 300))
      const used = cpuSeconds(pid)
      if (used === last || Date.now() > deadline) break
      last = used
    }
    const cpuUsed = cpuSeconds(pid) - cpu
    const results = await Promise.all(
      children.map(({ child }) => {
        const done = answer(child, 'arrivals')
        child.send({ kind: 'stop' })
        return done
      }),
    )
    const latencies: number[] = []
    let lastArrival = 0
    for (const result of results) {
      const arrivals = result.arrivals as Array<number[] | null>
      arrivals.forEach((times, i) => {
        for (const at of times ?? []) {
          latencies.push(at - sentAt[i])
          if (at > lastArrival) lastArrival = at
        }
      })
    }
    const elapsed = (lastArrival - (performance.timeOrigin + started)) / 1000
    return { delivered: latencies.length, latencies, elapsed, cpu: cpuUsed }
  } finally {
    for (const { child } of children) child.kill()
  }
}

interface CeilingFigure {
  shape: string
  connections: number
  coordinator: number[]
  bare: number[]
  /** Requests per CPU-second of each server process (robust to other load on the machine). */
  coordinatorPerCpu: number[]
  barePerCpu: number[]
}

/**
 * The coordinator against a bare node:http + better-sqlite3 server (bare-records.ts, its own
 * process) reading the same database file: the same calls, byte-identical bodies (checked first),
 * measured alternately (coordinator, bare, coordinator, bare, ...) with the same autocannon.
 */
async function measureCeiling(
  url: string,
  pid: number,
  dbFile: string,
  token: string,
  userId: string,
): Promise<CeilingFigure[]> {
  const port = 18091
  const bare = spawn(
    process.execPath,
    [
      ...(process.env.CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.CPU_PROF] : []),
      '--import',
      'tsx',
      fileURLToPath(new URL('./bare-records.ts', import.meta.url)),
      dbFile,
      String(port),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  )
  const bareUrl = `http://127.0.0.1:${port}`
  try {
    const end = Date.now() + 30_000
    for (;;) {
      try {
        if ((await fetch(`${bareUrl}/api/health`)).ok) break
      } catch {
        if (Date.now() > end) throw new Error('the bare server did not start')
        await new Promise((r) => setTimeout(r, 200))
      }
    }
    const filter = encodeURIComponent(`user = "${userId}"`)
    const listPath = `/api/collections/conversations/records?page=2&perPage=${ceilingPerPage}&sort=-last_message_at,-created&filter=${filter}`
    const first = await api(url, `${listPath}&skipTotal=1`, undefined, token)
    const shapes = [
      { shape: `list, ${ceilingPerPage} items, with totals`, path: listPath },
      { shape: `list, ${ceilingPerPage} items, skipTotal`, path: `${listPath}&skipTotal=1` },
      { shape: 'getOne', path: `/api/collections/conversations/records/${first.items[0].id}` },
    ]
    // The same bytes from both, or the comparison means nothing.
    for (const { shape, path } of shapes) {
      const [a, b] = await Promise.all(
        [url, bareUrl].map(async (base) => {
          const res = await fetch(base + path, { headers: { Authorization: token } })
          if (!res.ok) throw new Error(`${shape} from ${base}: ${res.status}`)
          return res.text()
        }),
      )
      if (a !== b) {
        throw new Error(
          `${shape}: the bare server's body differs from the coordinator's\n${a}\n${b}`,
        )
      }
    }
    const figures: CeilingFigure[] = []
    for (const connections of [10, 100]) {
      for (const { shape, path } of shapes.filter((s) => s.shape.includes(ceilingOnly))) {
        const figure: CeilingFigure = {
          shape,
          connections,
          coordinator: [],
          bare: [],
          coordinatorPerCpu: [],
          barePerCpu: [],
        }
        for (let r = 0; r < runs; r++) {
          for (const [side, base, serverPid] of [
            ['coordinator', url, pid],
            ['bare', bareUrl, bare.pid!],
          ] as const) {
            const cpu = cpuSeconds(serverPid)
            const result = await load({
              url: base + path,
              connections,
              duration,
              headers: { Authorization: token },
            })
            if (result.non2xx || result.errors) {
              throw new Error(
                `${shape} on ${side}: ${result.non2xx} non-2xx, ${result.errors} errors`,
              )
            }
            figure[side].push(result.requests.average)
            figure[side === 'bare' ? 'barePerCpu' : 'coordinatorPerCpu'].push(
              result.requests.total / (cpuSeconds(serverPid) - cpu),
            )
          }
        }
        console.log(
          `  ceiling ${shape} @${connections}: coordinator ${figure.coordinator.map(Math.round).join(', ')}; bare ${figure.bare.map(Math.round).join(', ')} req/s`,
        )
        figures.push(figure)
      }
    }
    return figures
  } finally {
    bare.kill()
  }
}

function printCeiling(figures: CeilingFigure[]) {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
  console.log(
    `  records vs a bare node:http + better-sqlite3 server on the same file (${runs} alternating runs x ${duration}s each; medians):`,
  )
  for (const f of figures) {
    const ratio = median(f.coordinator) / median(f.bare)
    const perCpu = median(f.coordinatorPerCpu) / median(f.barePerCpu)
    console.log(
      `    ${`${f.shape} @${f.connections}`.padEnd(34)} coordinator ${fmt(median(f.coordinator)).padStart(6)}  bare ${fmt(median(f.bare)).padStart(6)} req/s  ratio ${ratio.toFixed(2)}   (goal >= 0.7: ${ratio >= 0.7 ? 'met' : 'not met'})`,
    )
    console.log(
      `    ${''.padEnd(34)} per CPU-second: ${fmt(median(f.coordinatorPerCpu)).padStart(6)}  bare ${fmt(median(f.barePerCpu)).padStart(6)}        ratio ${perCpu.toFixed(2)}`,
    )
  }
}

async function main() {
  // 1,000 streams of one user from one address: the realtime limits would refuse most of them.
  const server = await startCoordinator(
    18090,
    {
      MESHWORK_REALTIME_MAX_STREAMS_PER_ADDRESS: '0',
      MESHWORK_REALTIME_MAX_STREAMS_PER_USER: '0',
    },
    process.env.CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.CPU_PROF] : [],
  )
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
    // The list's data set (not needed for the realtime part alone).
    if (parts.has('list') || parts.has('ceiling')) {
      for (let i = 0; i < 2000; i++) {
        await api(
          url,
          '/api/collections/conversations/records',
          { model, title: `Chat ${i % 2 ? 'about stories' : 'misc'} ${i}` },
          token,
        )
      }
    }
    // The web app's conversation sidebar, exactly as it asks (packages/web/src/features/chat/chat-api.ts):
    // the user's conversations, newest activity first, 50 a page, no totals. Page 2, so the page
    // is full. The same list with totals (COUNT over the user's rows) is measured too.
    const filter = encodeURIComponent(`user = "${userId}"`)
    const listPath = `/api/collections/conversations/records?page=2&perPage=50&skipTotal=1&sort=-last_message_at,-created&filter=${filter}`
    const countedPath = listPath.replace('&skipTotal=1', '')
    if (parts.has('list')) {
      const check = await api(url, listPath, undefined, token)
      if (check.items.length !== 50) throw new Error(`list returned ${check.items.length} items`)
      const counted = await api(url, countedPath, undefined, token)
      if (counted.totalItems !== 2000) throw new Error(`counted list total ${counted.totalItems}`)
    }

    const listRps: number[] = []
    const createRps: number[] = []
    const listPerCpu: number[] = []
    const createPerCpu: number[] = []
    const pid = server.child.pid!
    // All list runs first, on the fixed 2,000-row data set: the create runs add rows.
    for (let r = 0; r < (parts.has('list') ? runs : 0); r++) {
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
    for (let r = 0; r < (parts.has('list') ? runs : 0); r++) {
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
    // Before the create runs, which add rows: both servers must read the same 2,000.
    const ceiling = parts.has('ceiling')
      ? await measureCeiling(
          server.url,
          server.child.pid!,
          join(server.dataDir, 'meshwork.db'),
          token,
          userId,
        )
      : null
    for (let r = 0; r < (parts.has('create') ? runs : 0); r++) {
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
    // The streams are held by CLIENT_PROCS child processes reading raw sockets (sse-clients.ts),
    // so that the client's cost per event stays small beside the server's.
    let realtime: { delivered: number; latencies: number[]; elapsed: number; cpu: number } | null =
      null
    if (parts.has('realtime')) realtime = await fanOut(url, token, model, pid)
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
    if (listRps.length) {
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
    }
    if (ceiling) printCeiling(ceiling)
    if (realtime) {
      const { delivered, latencies, elapsed, cpu } = realtime
      console.log(
        `  realtime: ${subscribers} subscribers x ${events} events (${clientProcs} client processes): delivered ${delivered} of ${events * subscribers}`,
      )
      console.log(
        `    ${fmt(delivered / elapsed)} events/s delivered; latency p50 ${median(latencies).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms; coordinator ${((cpu * 1e6) / Math.max(1, delivered)).toFixed(1)} us CPU per event delivered   (goal p99 < 100 ms)`,
      )
    }
  } finally {
    await server.stop()
  }
}

await main()
