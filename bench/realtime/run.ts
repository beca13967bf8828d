/**
 * bench/realtime: event delivery to normal subscribers with and without a hostile subscriber
 * beside them, in one run, printed side by side.
 * - normal: USERS users, each with one SSE stream subscribed to `conversations/*` (their own);
 *   a writer creates EVENTS conversations for them in turn (one every PACE ms); delivery latency
 *   is from the create call to the event at the owner's stream.
 * - hostile: one more user who writes its own conversations all along (both phases, so the write
 *   load is the same) and, in the second phase only, opens HOSTILE_STREAMS streams with
 *   HOSTILE_SUBS filtered subscriptions each (filters evaluated in memory, filters through a
 *   relation that need SQL, and a few that match everything), as many as the coordinator accepts.
 * - while each phase runs, /api/health is asked every 50 ms (latency p50/p99), and the
 *   coordinator's CPU time for the phase is read from /proc.
 * Run: npm run bench:realtime   (env: USERS=20, EVENTS=300, PACE=20, HOSTILE_STREAMS=10,
 * HOSTILE_SUBS=1000, HOSTILE_PACE=100)
 */
import { request } from 'node:http'
import { cpuSeconds, median, percentile, startCoordinator } from '../lib/coordinator-process.ts'

const users = Number(process.env.USERS ?? 20)
const events = Number(process.env.EVENTS ?? 300)
const pace = Number(process.env.PACE ?? 20)
const hostileStreams = Number(process.env.HOSTILE_STREAMS ?? 10)
const hostileSubs = Number(process.env.HOSTILE_SUBS ?? 1000)
const hostilePace = Number(process.env.HOSTILE_PACE ?? 100)

interface Account {
  token: string
  id: string
}

async function api(url: string, path: string, body?: unknown, token?: string) {
  const res = await fetch(url + path, {
    method: body ? 'POST' : 'GET',
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: token } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  const text = await res.text()
  if (!res.ok)
    throw Object.assign(new Error(`${path}: ${res.status} ${text.slice(0, 200)}`), {
      status: res.status,
    })
  return text ? JSON.parse(text) : null
}

async function account(url: string, name: string): Promise<Account> {
  const email = `${name}${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}@example.com`
  await api(url, '/api/collections/users/records', {
    email,
    password: 'password123',
    passwordConfirm: 'password123',
  })
  const auth = await api(url, '/api/collections/users/auth-with-password', {
    identity: email,
    password: 'password123',
  })
  return { token: auth.token, id: auth.record.id }
}

/** One SSE stream; resolves with its client id and a stop function once PB_CONNECT arrived. */
function openStream(url: string, onEvent: (event: string, data: string, at: number) => void) {
  return new Promise<{ clientId: string; stop: () => void }>((resolve, reject) => {
    const req = request(url + '/api/realtime', { agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        return reject(
          Object.assign(new Error(`stream: ${res.statusCode}`), { status: res.statusCode }),
        )
      }
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        const at = performance.now()
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const frame = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const event = /event:(.*)/.exec(frame)?.[1] ?? ''
          const data = /data:(.*)/.exec(frame)?.[1] ?? ''
          if (event === 'PB_CONNECT')
            resolve({ clientId: /^id:(.*)$/m.exec(frame)![1], stop: () => req.destroy() })
          else onEvent(event, data, at)
        }
      })
    })
    req.on('error', () => {})
    req.end()
  })
}

const key = (filter: string) =>
  `conversations/*?options=${encodeURIComponent(JSON.stringify({ query: { filter } }))}`

/** The hostile subscriber's filters: most never match, each costs an evaluation per event. */
function hostileKeys(stream: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const n = `${stream}x${i}`
    if (i % 50 === 0) return key(`title != "${n}"`) // matches everything: a delivery per event
    if (i % 2 === 0) return key(`title ~ "${n}" || message_count > ${1000 + i}`) // in memory
    return key(`model.name ~ "${n}" || user.email ~ "${n}"`) // through relations: needs SQL
  })
}

async function main() {
  const coordinator = await startCoordinator(18390 + Math.floor(Math.random() * 500), {
    MESHWORK_LINK_FLOW_LIMIT: '0',
  })
  const url = coordinator.url
  const pid = coordinator.child.pid!
  const stops: Array<() => void> = []
  try {
    const model: string = (await api(url, '/api/collections/models/records')).items[0]?.id
    const normal = await Promise.all(
      Array.from({ length: users }, (_, i) => account(url, `normal${i}`)),
    )
    const hostile = await account(url, 'hostile')
    const sentAt = new Map<string, number>()
    const latencies: number[] = []
    for (const user of normal) {
      const stream = await openStream(url, (_event, data, at) => {
        const title = /"title":"(ev-\d+)"/.exec(data)?.[1]
        const sent = title && sentAt.get(title)
        if (sent) latencies.push(at - sent)
      })
      stops.push(stream.stop)
      await api(
        url,
        '/api/realtime',
        { clientId: stream.clientId, subscriptions: ['conversations/*'] },
        user.token,
      )
    }

    let seq = 0
    async function phase(name: string) {
      latencies.length = 0
      const health: number[] = []
      let running = true
      const prober = (async () => {
        while (running) {
          const t = performance.now()
          await fetch(`${url}/api/health`).then((r) => r.arrayBuffer())
          health.push(performance.now() - t)
          await new Promise((r) => setTimeout(r, 50))
        }
      })()
      const hostileWriter = (async () => {
        while (running) {
          await api(
            url,
            '/api/collections/conversations/records',
            { model, title: `hostile-${seq}` },
            hostile.token,
          ).catch(() => {})
          await new Promise((r) => setTimeout(r, hostilePace))
        }
      })()
      const cpu = cpuSeconds(pid)
      const started = performance.now()
      for (let i = 0; i < events; i++) {
        const title = `ev-${seq++}`
        const owner = normal[i % normal.length]
        sentAt.set(title, performance.now())
        await api(url, '/api/collections/conversations/records', { model, title }, owner.token)
        await new Promise((r) => setTimeout(r, pace))
      }
      const deadline = Date.now() + 30_000
      while (latencies.length < events && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50))
      const seconds = (performance.now() - started) / 1000
      running = false
      await Promise.all([prober, hostileWriter])
      return {
        name,
        delivered: latencies.length,
        p50: median(latencies),
        p99: percentile(latencies, 99),
        max: Math.max(...latencies),
        healthP50: median(health),
        healthP99: percentile(health, 99),
        cpu: cpuSeconds(pid) - cpu,
        seconds,
      }
    }

    const quiet = await phase('without hostile')

    // The hostile subscriber: as many streams and subscriptions as the coordinator accepts.
    let streams = 0
    let accepted = 0
    const refusals = new Map<string, number>()
    const refuse = (why: string) => refusals.set(why, (refusals.get(why) ?? 0) + 1)
    let hostileEvents = 0
    for (let s = 0; s < hostileStreams; s++) {
      let stream
      try {
        stream = await openStream(url, () => hostileEvents++)
      } catch (err) {
        refuse(`stream ${(err as { status?: number }).status}`)
        continue
      }
      stops.push(stream.stop)
      // Asks for all of them; when refused, for as many as the refusal says are allowed (or half).
      for (let want = hostileSubs; want >= 1;) {
        try {
          await api(
            url,
            '/api/realtime',
            { clientId: stream.clientId, subscriptions: hostileKeys(s, want) },
            hostile.token,
          )
          accepted += want
          streams++
          break
        } catch (err) {
          refuse(`subscribe ${(err as { status?: number }).status}`)
          const allowed = Number(/at most (\d+)/.exec(String(err))?.[1])
          want = allowed && allowed < want ? allowed : Math.floor(want / 2)
        }
      }
    }
    const attacked = await phase('with hostile')

    const fmt = (n: number) => n.toFixed(1).padStart(8)
    console.log(
      `bench/realtime on SQLite: ${users} normal subscribers, ${events} events each phase, one every ${pace} ms`,
    )
    console.log(
      `  hostile user: asked ${hostileStreams} streams x ${hostileSubs} filtered subscriptions; accepted ${streams} streams, ${accepted} subscriptions${refusals.size ? ` (refused: ${[...refusals].map(([k, v]) => `${v}x ${k}`).join(', ')})` : ''}; it received ${hostileEvents} events`,
    )
    console.log(
      `                                  ${quiet.name.padStart(16)}  ${attacked.name.padStart(16)}`,
    )
    const row = (label: string, a: number, b: number) =>
      console.log(`  ${label.padEnd(32)}${fmt(a)}          ${fmt(b)}`)
    row('delivered events', quiet.delivered, attacked.delivered)
    row('delivery p50 (ms)', quiet.p50, attacked.p50)
    row('delivery p99 (ms)', quiet.p99, attacked.p99)
    row('delivery max (ms)', quiet.max, attacked.max)
    row('/api/health p50 (ms)', quiet.healthP50, attacked.healthP50)
    row('/api/health p99 (ms)', quiet.healthP99, attacked.healthP99)
    row('coordinator CPU (s)', quiet.cpu, attacked.cpu)
    row('phase duration (s)', quiet.seconds, attacked.seconds)
  } finally {
    stops.forEach((stop) => stop())
    await coordinator.stop()
  }
}

await main()
