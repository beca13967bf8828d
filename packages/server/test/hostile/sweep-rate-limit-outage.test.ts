/**
 * Rate limits while Redis is down, scaled out (two coordinators on PostgreSQL + Redis), from the
 * outside: real HTTP requests against a Redis of the suite's own (`support/own-redis.ts`), killed
 * (-9) and started again empty, or frozen (SIGSTOP: connections stay open, nothing is answered, as
 * in a network partition). The promise (docs/scaling-out.md, docs/threat-model.md): a limit fails
 * open to per-process counting, so each process holds it on its own (processes x limit in all)
 * until Redis answers again, then the processes share each count again; a failure to count never
 * refuses everybody, never answers 500 and never keeps a request waiting on the dead Redis.
 * Every limit counted by `src/tools/rate-limiter.ts` is exercised: chat sends and quotes
 * (MESHWORK_CHAT_RATE_LIMIT), password attempts per account and per address, sign-ups, link
 * flows, and /v1 calls per API key. Realtime streams per address and per user, counted in Redis
 * by the realtime directory, fail closed instead: 503, promptly. Each case either pins a bug it
 * found (it failed before its fix) or shows behaviour that was already right.
 * Runs when TEST_DATABASE_URL and TEST_REDIS_URL are set (CI sets both).
 */
import PocketBase from 'pocketbase'
import { afterEach, describe, expect, it } from 'vitest'
import type { Config } from '../../src/config.ts'
import { modelId } from '../fixtures.ts'
import type { TestServer } from '../harness.ts'
import { servingNode, waitUntil } from '../support/network.ts'
import type { OwnRedis } from '../support/own-redis.ts'
import { openStream, postSubscriptions } from '../support/sse.ts'
import { redisState, TwoCoordinators } from '../support/two-coordinators.ts'
import { unhandledDuringSuite } from '../support/unhandled.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL
if (!redisUrl || !databaseUrl)
  console.log('sweep-rate-limit-outage.test.ts: skipped (set TEST_DATABASE_URL and TEST_REDIS_URL)')

/** Per process while Redis is down; over both processes once it is back. */
const limits = {
  chatRateLimit: 2, // sends; quotes get 10 points per send allowed: 20
  signupLimit: 2,
  linkFlowLimit: 2,
  apiKeyRateLimit: 2,
  apiUserRateLimit: 1000,
  loginThrottle: { freeAttempts: 1000, maxDelayMs: 0, perAccount: 4, perAddress: 6 },
  realtimeLimits: { connectionsPerAddress: 2 },
} satisfies Partial<Config>
const QUOTES = 20

/** Longer than any answer may take (a take waits at most 1 s for Redis): a request waiting on
 * the dead Redis fails the test here. */
const ANSWER_WITHIN_MS = 3000

let n = 0
const unique = (name: string) => `${name}${Date.now().toString(36)}${n++}`
/** A client address of its own, so that only the limit under test counts it. */
const address = () => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n++ & 255}`

interface Answer {
  status: number
  body: Record<string, unknown>
  ms: number
}

/** A JSON POST from client address `from` (the test is a trusted proxy), timed, never hanging. */
async function post(
  server: TestServer,
  path: string,
  body: unknown,
  { token, from = '127.0.0.1' }: { token?: string; from?: string } = {},
): Promise<Answer> {
  const started = performance.now()
  const res = await fetch(new URL(path, server.url), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-forwarded-for': from,
      ...(token ? { authorization: token } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS * 4),
  })
  return { status: res.status, body: await res.json(), ms: performance.now() - started }
}

async function get(server: TestServer, path: string, bearer: string): Promise<Answer> {
  const started = performance.now()
  const res = await fetch(new URL(path, server.url), {
    headers: { authorization: `Bearer ${bearer}` },
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS * 4),
  })
  return { status: res.status, body: await res.json(), ms: performance.now() - started }
}

/** GET /api/realtime; a stream that opens is closed at once. */
async function openRealtime(server: TestServer): Promise<Answer> {
  const started = performance.now()
  const res = await fetch(`${server.url}/api/realtime`, {
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS * 4),
  })
  const ms = performance.now() - started
  if (res.status === 200) {
    await res.body?.cancel()
    return { status: 200, body: {}, ms }
  }
  return { status: res.status, body: await res.json(), ms }
}

const statuses = (answers: Answer[]) => answers.map((a) => a.status).sort()
const times = (count: number, status: number) => Array<number>(count).fill(status)

/** Every answer came quickly and none was a 500; each refusal is our usual 429. */
function expectAnsweredWell(answers: Answer[]) {
  for (const answer of answers) {
    expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(500)
    expect(answer.ms).toBeLessThan(ANSWER_WITHIN_MS)
    if (answer.status !== 429) continue
    // /v1 speaks OpenAI's error shape; the rest PocketBase's.
    if ('error' in answer.body)
      expect(answer.body).toMatchObject({ error: { code: 'rate_limit_exceeded' } })
    else expect(answer.body).toEqual({ status: 429, message: 'Too Many Requests.', data: {} })
  }
}

describe.runIf(redisUrl && databaseUrl)(
  'Rate limits while Redis is down, two coordinators [postgres]',
  () => {
    const unhandled = unhandledDuringSuite()
    const coordinators = new TwoCoordinators()
    let redis: OwnRedis
    let a: TestServer
    let b: TestServer

    async function pair() {
      ;({ redis, a, b } = await coordinators.start({ trustedProxies: ['127.0.0.1'], ...limits }))
    }

    afterEach(async () => {
      await coordinators.stop()
      expect(unhandled).toEqual([])
    })

    /** Both processes count in Redis again (their limiter connections are ready). */
    async function redisBack() {
      await waitUntil(
        async () => (await redisState(a)) === 'online' && (await redisState(b)) === 'online',
        15_000,
      )
      await Promise.all([a.core.limits.ready(15_000), b.core.limits.ready(15_000)])
    }

    /** An account signed up from an address of its own (sign-ups are limited per address). */
    async function account(name: string) {
      const email = `${unique(name)}@example.com`
      const body = { email, password: 'password123', passwordConfirm: 'password123' }
      expect(
        (await post(a, '/api/collections/users/records', body, { from: address() })).status,
      ).toBe(200)
      return email
    }

    /** A signed-in user with an API key of their own. */
    async function user(name: string): Promise<{ pb: PocketBase; apiKey: string }> {
      const pb = a.client()
      await pb.collection('users').authWithPassword(await account(name), 'password123')
      const made = await post(a, '/api/keys', { name: 'script' }, { token: pb.authStore.token })
      expect(made.status).toBe(200)
      return { pb, apiKey: made.body.key as string }
    }

    async function conversations(pb: PocketBase, count: number) {
      const made = []
      for (let i = 0; i < count; i++)
        made.push(await pb.collection('conversations').create({ title: 'Outage' }))
      return made.map((c) => c.id)
    }

    /** `count` concurrent requests of each kind on `server`, each limit's key shared by all. */
    async function burst(
      server: TestServer,
      who: { pb: PocketBase; apiKey: string },
      model: string,
      chats: string[],
      keys: { address: string; account: string },
    ) {
      const token = who.pb.authStore.token
      const prompt = { model_id: model, prompt: 'Hi' }
      const many = <T>(count: number, one: (i: number) => Promise<T>) =>
        Promise.all(Array.from({ length: count }, (_, i) => one(i)))
      const [quotes, sends, logins, signups, flows, calls] = await Promise.all([
        many(QUOTES + 3, () => post(server, '/api/chat/quote', prompt, { token })),
        many(chats.length, (i) =>
          post(server, '/api/chat/send', { ...prompt, conversation_id: chats[i] }, { token }),
        ),
        // Each guess from an address of its own: only the account's limit applies.
        many(6, (i) =>
          post(
            server,
            '/api/collections/users/auth-with-password',
            { identity: keys.account, password: `guess-${i}-xx` },
            { from: address() },
          ),
        ),
        many(3, () =>
          post(
            server,
            '/api/collections/users/records',
            {
              email: `${unique('s')}@example.com`,
              password: 'password123',
              passwordConfirm: 'password123',
            },
            { from: keys.address },
          ),
        ),
        many(3, () =>
          post(server, '/api/auth/start-flow', { device_name: 'Laptop' }, { from: keys.address }),
        ),
        many(3, () => get(server, '/v1/models', who.apiKey)),
      ])
      const all = [...quotes, ...sends, ...logins, ...signups, ...flows, ...calls]
      expectAnsweredWell(all)
      return {
        quotes: statuses(quotes),
        sends: statuses(sends),
        logins: statuses(logins),
        signups: statuses(signups),
        flows: statuses(flows),
        calls: statuses(calls),
      }
    }

    type Bursts = Awaited<ReturnType<typeof burst>>
    type Kind = keyof Bursts

    /** What one process allows of each burst: its own limit, the rest refused. */
    const onePerProcess = {
      quotes: [...times(QUOTES, 200), ...times(3, 429)],
      sends: [200, 200, 429],
      logins: [...times(4, 400), 429, 429],
      signups: [200, 200, 429],
      flows: [200, 200, 429],
      calls: [200, 200, 429],
    }

    /** Two processes' bursts put together: the limits of one deployment. */
    const shared = (onA: Bursts, onB: Bursts) =>
      Object.fromEntries(
        Object.keys(onA).map((k) => [k, [...onA[k as Kind], ...onB[k as Kind]].sort()]),
      )
    const sharedLimits = {
      quotes: [...times(QUOTES, 200), ...times(QUOTES + 6, 429)],
      sends: [200, 200, 429],
      logins: [...times(4, 400), ...times(8, 429)],
      signups: [200, 200, 429, 429, 429, 429],
      flows: [200, 200, 429, 429, 429, 429],
      calls: [200, 200, 429, 429, 429, 429],
    }

    it('Redis killed: each process holds every limit on its own (processes x limit in all), answering at once, never 500; back, the processes share each count again and nothing is stuck', async () => {
      await pair()
      const model = await modelId(a)
      await servingNode(a, model)
      const who = await user('outage')
      const keys = { address: address(), account: await account('victim') }
      const chats = await conversations(who.pb, 6)
      const earlier = await openStream(a.url) // a guest's, opened before the outage

      await redis.kill()
      await waitUntil(async () => (await redisState(a)) === 'offline', 10_000)
      // The same user, account and address on both processes: each process counts them alone.
      expect(await burst(a, who, model, chats.slice(0, 3), keys)).toEqual(onePerProcess)
      expect(await burst(b, who, model, chats.slice(3), keys)).toEqual(onePerProcess)
      // Realtime streams, counted per address and per user in Redis, fail closed: a new stream is
      // refused, and so is signing in on an open one, as unavailable (503), not as over a limit.
      const unavailable = { status: 503, message: 'Realtime is unavailable, try again.' }
      for (const server of [a, b]) {
        const refused = await openRealtime(server)
        expect(refused.ms).toBeLessThan(ANSWER_WITHIN_MS)
        expect(refused).toMatchObject({ status: 503, body: unavailable })
      }
      const signingIn = await postSubscriptions(
        a.url,
        earlier.clientId,
        ['requests'],
        who.pb.authStore.token,
      )
      expect(signingIn).toMatchObject({ status: 503, body: unavailable })
      await earlier.close()

      await redis.start() // empty: counts kept in Redis before the outage are gone
      await redisBack()
      // This address may hold its two streams (over both processes), and sign in on them.
      const open = [await openStream(a.url), await openStream(b.url)]
      await expect(openStream(a.url)).rejects.toMatchObject({ status: 429 })
      const signedIn = await postSubscriptions(
        b.url,
        open[0].clientId,
        ['requests'],
        who.pb.authStore.token,
      )
      expect(signedIn.status).toBe(204)
      await Promise.all(open.map((stream) => stream.close()))
      // Counts taken in memory during the outage do not outlive it: what was refused is served.
      const token = who.pb.authStore.token
      const quoted = await post(a, '/api/chat/quote', { model_id: model, prompt: 'Hi' }, { token })
      expect(quoted.status).toBe(200)
      // And the two processes share each count again: another user, account and address.
      const next = await user('after')
      const nextChats = await conversations(next.pb, 3)
      const nextKeys = { address: address(), account: await account('victim') }
      const [onA, onB] = await Promise.all([
        burst(a, next, model, nextChats.slice(0, 2), nextKeys),
        burst(b, next, model, nextChats.slice(2), nextKeys),
      ])
      expect(shared(onA, onB)).toEqual(sharedLimits)
    })

    it('Redis frozen (connections open, nothing answered, as in a partition): every limit still answers within a bound, per process; thawed, the processes share each count again', async () => {
      await pair()
      const model = await modelId(a)
      await servingNode(a, model)
      const who = await user('frozen')
      const keys = { address: address(), account: await account('victim') }
      const chats = await conversations(who.pb, 6)

      redis.pause()
      expect(await burst(a, who, model, chats.slice(0, 3), keys)).toEqual(onePerProcess)
      expect(await burst(b, who, model, chats.slice(3), keys)).toEqual(onePerProcess)
      // Realtime streams are counted per address in Redis too, and fail closed: refused (503),
      // promptly, and refused for good: none of them counts once Redis answers again.
      const streams = await Promise.all([a, b, a].map((server) => openRealtime(server)))
      for (const stream of streams) {
        expect(stream.ms).toBeLessThan(ANSWER_WITHIN_MS)
        expect(stream).toMatchObject({
          status: 503,
          body: { status: 503, message: 'Realtime is unavailable, try again.' },
        })
      }

      redis.resume()
      await redisBack()
      // This address may hold its two streams (over both processes), as before the freeze.
      const open = [await openStream(a.url), await openStream(b.url)]
      await expect(openStream(a.url)).rejects.toMatchObject({ status: 429 })
      await Promise.all(open.map((stream) => stream.close()))
      const next = await user('thawed')
      const nextChats = await conversations(next.pb, 3)
      const nextKeys = { address: address(), account: await account('victim') }
      const [onA, onB] = await Promise.all([
        burst(a, next, model, nextChats.slice(0, 2), nextKeys),
        burst(b, next, model, nextChats.slice(2), nextKeys),
      ])
      expect(shared(onA, onB)).toEqual(sharedLimits)
    })

    it('password guessing cannot be made unlimited by taking Redis away: per account and per address at most processes x limit while it is down, the right password refused once used up', async () => {
      await pair()
      const victim = await account('victim')
      const guess = (server: TestServer, identity: string, password: string, from: string) =>
        post(server, '/api/collections/users/auth-with-password', { identity, password }, { from })
      /** `count` concurrent guesses, alternating between the processes. */
      const guesses = async (
        count: number,
        one: (server: TestServer, i: number) => Promise<Answer>,
      ) => {
        const answers = await Promise.all(
          Array.from({ length: count }, (_, i) => one(i % 2 ? a : b, i)),
        )
        expectAnsweredWell(answers)
        return statuses(answers)
      }
      const onVictim = (count: number) =>
        guesses(count, (server, i) => guess(server, victim, `guess-${i}-xx`, address()))

      // Shared while Redis is up: the account's 4 attempts over both processes.
      expect(await onVictim(10)).toEqual([...times(4, 400), ...times(6, 429)])

      await redis.kill()
      // Down: each process counts on its own from zero (the 4 counted in Redis are out of reach),
      // 4 each, however many guesses come at once: the price of failing open, and its bound.
      expect(await onVictim(40)).toEqual([...times(8, 400), ...times(32, 429)])
      // The right password is not even checked on either process: used up is used up.
      for (const server of [a, b])
        expect((await guess(server, victim, 'password123', address())).status).toBe(429)
      // One address across many accounts: its 6 attempts per process.
      const from = address()
      expect(
        await guesses(30, (server, i) =>
          guess(server, `${unique(`nobody${i}`)}@example.com`, 'wrong-password', from),
        ),
      ).toEqual([...times(12, 400), ...times(18, 429)])

      // Back (empty, as without persistence): one shared count again, from zero.
      await redis.start()
      await redisBack()
      expect(await onVictim(10)).toEqual([...times(4, 400), ...times(6, 429)])
    })
  },
)
