/**
 * Rate limits from the outside: the login throttle per address and per account (concurrent
 * guesses cannot slip past it, one account's success resets nobody's failures), the sign-up limit
 * per address, the chat-send limit per user, the client address behind a real nginx (trusted and
 * untrusted peers, spoofed X-Forwarded-For, the approve URL's host), and two coordinator
 * processes sharing every count through Redis.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Config } from '../src/config.ts'
import { modelId } from './fixtures.ts'
import { signUp, startTestServer, type TestServer } from './harness.ts'
import { adjustBalance } from './support/ledger.ts'
import { postJson, servingNode } from './support/network.ts'
import { PROXY_ADDRESS, requestFrom, startNginx } from './support/proxy.ts'

const noDelays = { freeAttempts: 1000, maxDelayMs: 0 }

const loginPath = '/api/collections/users/auth-with-password'
let n = 0
const email = (name: string) => `${name}${Date.now().toString(36)}${n++}@example.com`

/** A login attempt from `address` (the test client itself is a trusted proxy: 127.0.0.1). */
function login(server: TestServer, identity: string, password: string, address: string) {
  return fetch(server.url + loginPath, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
    body: JSON.stringify({ identity, password }),
  })
}

async function account(server: TestServer, name: string) {
  const identity = email(name)
  await server
    .client()
    .collection('users')
    .create({ email: identity, password: 'password123', passwordConfirm: 'password123' })
  return identity
}

const statuses = (responses: Response[]) => responses.map((r) => r.status).sort()

describe('login throttle', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer('sqlite', {
      trustedProxies: ['127.0.0.1'],
      loginThrottle: { ...noDelays, perAddress: 10, perAccount: 5 },
    })
  })
  afterAll(() => server.stop())

  it('counts concurrent guesses on one account before checking them: only the limit gets through', async () => {
    const victim = await account(server, 'victim')
    const guesses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        login(server, victim, `guess-${i}-xx`, `198.51.100.${i + 1}`),
      ),
    )
    expect(statuses(guesses)).toEqual([...Array(5).fill(400), ...Array(25).fill(429)])
    const refused = guesses.find((r) => r.status === 429)!
    expect(await refused.json()).toEqual({ status: 429, message: 'Too Many Requests.', data: {} })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    // Until the window ends the account is refused to everyone, its owner included: the price of
    // a per-account limit (docs/threat-model.md).
    expect((await login(server, victim, 'password123', '203.0.113.77')).status).toBe(429)
  })

  it('counts concurrent guesses from one address across accounts', async () => {
    const guesses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        login(server, email(`nobody${i}`), 'wrong-password', '198.51.100.200'),
      ),
    )
    expect(statuses(guesses)).toEqual([...Array(10).fill(400), ...Array(20).fill(429)])
  })

  it("never lets one account's success reset another's failures", async () => {
    const mine = await account(server, 'attacker')
    const target = await account(server, 'target')
    const from = '198.51.100.201'
    // Four failures on the target (its limit is five), then a success on the attacker's own account.
    for (let i = 0; i < 4; i++)
      expect((await login(server, target, `guess-${i}-xx`, from)).status).toBe(400)
    expect((await login(server, mine, 'password123', from)).status).toBe(200)
    // The target still has one guess left, not five more; and the address's count went on too.
    expect((await login(server, target, 'guess-4-xx', from)).status).toBe(400)
    expect((await login(server, target, 'guess-5-xx', from)).status).toBe(429)
    // The address has used 5 of 10 (the success gave back only its own count).
    for (let i = 0; i < 5; i++)
      expect((await login(server, email('x'), 'wrong-password', from)).status).toBe(400)
    expect((await login(server, mine, 'password123', from)).status).toBe(429)
  })
})

describe('sign-up limit (MESHWORK_SIGNUP_LIMIT)', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer('sqlite', { trustedProxies: ['127.0.0.1'], signupLimit: 3 })
  })
  afterAll(() => server.stop())

  const register = (address: string, identity = email('new')) =>
    fetch(`${server.url}/api/collections/users/records`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
      body: JSON.stringify({
        email: identity,
        password: 'password123',
        passwordConfirm: 'password123',
      }),
    })

  it('lets one address create at most the limit per hour, even all at once', async () => {
    const before = await server.core.database.db.selectFrom('users').select('id').execute()
    const answers = await Promise.all(Array.from({ length: 8 }, () => register('192.0.2.10')))
    expect(statuses(answers)).toEqual([200, 200, 200, 429, 429, 429, 429, 429])
    expect(await answers.find((r) => r.status === 429)!.json()).toEqual({
      status: 429,
      message: 'Too Many Requests.',
      data: {},
    })
    const after = await server.core.database.db.selectFrom('users').select('id').execute()
    expect(after.length - before.length).toBe(3)
    // Another address is not affected.
    expect((await register('192.0.2.11')).status).toBe(200)
  })

  it('does not count a sign-up that failed validation', async () => {
    const address = '192.0.2.12'
    for (let i = 0; i < 5; i++) expect((await register(address, 'not-an-email')).status).toBe(400)
    const ok = await Promise.all([register(address), register(address), register(address)])
    expect(statuses(ok)).toEqual([200, 200, 200])
    expect((await register(address)).status).toBe(429)
  })
})

describe('chat send limit (MESHWORK_CHAT_RATE_LIMIT)', () => {
  let server: TestServer
  let stories = ''
  beforeAll(async () => {
    server = await startTestServer('sqlite', { chatRateLimit: 2 })
    stories = await modelId(server)
    await servingNode(server, stories)
  })
  afterAll(() => server.stop())

  it('accepts at most the limit per user per minute, even all at once; other users are not affected', async () => {
    const pb = await signUp(server, 'chatty')
    const conversation = await pb.collection('conversations').create({ title: 'New Chat' })
    const body = { conversation_id: conversation.id, model_id: stories, prompt: 'Hello' }
    const sends = await Promise.all(
      Array.from({ length: 6 }, () => postJson(server, '/api/chat/send', body, pb.authStore.token)),
    )
    expect(sends.map((s) => s.status).sort()).toEqual([200, 200, 429, 429, 429, 429])
    expect(sends.find((s) => s.status === 429)!.body).toEqual({
      status: 429,
      message: 'Too Many Requests.',
      data: {},
    })
    const retry = await postJson(
      server,
      '/api/requests/retry',
      { request_id: sends.find((s) => s.status === 200)!.body.request_id },
      pb.authStore.token,
    )
    expect(retry.status).toBe(429)

    const other = await signUp(server, 'other')
    const theirs = await other.collection('conversations').create({ title: 'New Chat' })
    const send = await postJson(
      server,
      '/api/chat/send',
      { ...body, conversation_id: theirs.id },
      other.authStore.token,
    )
    expect(send.status).toBe(200)
  })

  it('does not count sends refused by validation', async () => {
    const pb = await signUp(server, 'typo')
    const conversation = await pb.collection('conversations').create({ title: 'New Chat' })
    for (let i = 0; i < 4; i++) {
      const empty = await postJson(
        server,
        '/api/chat/send',
        { conversation_id: conversation.id, model_id: stories, prompt: ' ' },
        pb.authStore.token,
      )
      expect(empty.status).toBe(400)
    }
    const body = { conversation_id: conversation.id, model_id: stories, prompt: 'Hello' }
    expect((await postJson(server, '/api/chat/send', body, pb.authStore.token)).status).toBe(200)
    expect((await postJson(server, '/api/chat/send', body, pb.authStore.token)).status).toBe(200)
    expect((await postJson(server, '/api/chat/send', body, pb.authStore.token)).status).toBe(429)
  })

  it('0 means no limit', async () => {
    const unlimited = await startTestServer('sqlite', { chatRateLimit: 0 })
    try {
      const model = await modelId(unlimited)
      const { node } = await servingNode(unlimited, model)
      node.chunks = ['Hi']
      const pb = await signUp(unlimited, 'unlimited')
      await adjustBalance(unlimited, pb.authStore.record!.id, 100_000)
      // More than the default limit (20), each in a conversation of its own.
      const conversations = await Promise.all(
        Array.from({ length: 25 }, () => pb.collection('conversations').create({ title: 'Chat' })),
      )
      const sends = await Promise.all(
        conversations.map((c) =>
          postJson(
            unlimited,
            '/api/chat/send',
            { conversation_id: c.id, model_id: model, prompt: 'Hi' },
            pb.authStore.token,
          ),
        ),
      )
      expect(
        sends.map((s) => s.status),
        JSON.stringify(sends[0].body),
      ).toEqual(Array(25).fill(200))
    } finally {
      await unlimited.stop()
    }
  })
})

describe('behind a real proxy (nginx)', () => {
  const throttle = { ...noDelays, perAddress: 3, perAccount: 1000 }
  let trusting: TestServer
  let proxy: Awaited<ReturnType<typeof startNginx>>
  beforeAll(async () => {
    trusting = await startTestServer('sqlite', {
      trustedProxies: [PROXY_ADDRESS],
      loginThrottle: throttle,
    })
    proxy = await startNginx(trusting.url)
  })
  afterAll(async () => {
    await proxy.stop()
    await trusting.stop()
  })

  const guess = (base: string, from: string, headers: Record<string, string> = {}) =>
    requestFrom(from, base + loginPath, {
      headers,
      body: { identity: email('guess'), password: 'wrong-password' },
    })

  it('counts each client behind a trusted proxy on its own, whatever it writes into X-Forwarded-For', async () => {
    const spoofs = ['203.0.113.1', '203.0.113.2, 203.0.113.3', 'not-an-address']
    for (const spoof of spoofs)
      expect((await guess(proxy.url, '127.0.0.3', { 'x-forwarded-for': spoof })).status).toBe(400)
    expect((await guess(proxy.url, '127.0.0.3', { 'x-forwarded-for': '203.0.113.4' })).status).toBe(
      429,
    )
    // Another client through the same proxy has its own count.
    expect((await guess(proxy.url, '127.0.0.4')).status).toBe(400)
  })

  it('ignores forwarding headers from a peer that is not a trusted proxy', async () => {
    for (let i = 0; i < 3; i++)
      expect(
        (await guess(trusting.url, '127.0.0.5', { 'x-forwarded-for': `203.0.113.${10 + i}` }))
          .status,
      ).toBe(400)
    expect(
      (await guess(trusting.url, '127.0.0.5', { 'x-forwarded-for': '203.0.113.20' })).status,
    ).toBe(429)
  })

  it("builds the approve URL from the proxy's host and scheme, and never from an untrusted X-Forwarded-Host", async () => {
    const viaProxy = await requestFrom('127.0.0.6', `${proxy.url}/api/auth/start-flow`, {
      headers: { host: 'meshwork.example' },
      body: { device_name: 'Laptop' },
    })
    expect(String(viaProxy.body.approve_url)).toMatch(
      /^https:\/\/meshwork\.example\/auth\/approve-node\?token=/,
    )
    const direct = await requestFrom('127.0.0.6', `${trusting.url}/api/auth/start-flow`, {
      headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
      body: { device_name: 'Laptop' },
    })
    expect(String(direct.body.approve_url)).toMatch(
      new RegExp(`^http://127\\.0\\.0\\.1:${trusting.port}/auth/approve-node\\?token=`),
    )
  })

  it('counts every client as the proxy when the proxy is not trusted (why the setting exists)', async () => {
    const untrusting = await startTestServer('sqlite', { loginThrottle: throttle })
    const front = await startNginx(untrusting.url)
    try {
      for (let i = 0; i < 3; i++)
        expect((await guess(front.url, `127.0.0.${10 + i}`)).status).toBe(400)
      expect((await guess(front.url, '127.0.0.20')).status).toBe(429)
    } finally {
      await front.stop()
      await untrusting.stop()
    }
  })
})

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL

describe.runIf(redisUrl)(
  'two coordinator processes share every count through Redis [redis]',
  () => {
    let a: TestServer
    let b: TestServer
    beforeAll(async () => {
      const shared: Partial<Config> = {
        redisUrl,
        redisPrefix: `meshwork-test-rl-${randomUUID()}`,
        trustedProxies: ['127.0.0.1'],
        loginThrottle: { ...noDelays, perAddress: 4, perAccount: 5 },
        signupLimit: 2,
        linkFlowLimit: 2,
      }
      a = await startTestServer('sqlite', shared)
      b = await startTestServer('sqlite', shared)
    })
    afterAll(async () => {
      await a.stop()
      await b.stop()
    })

    it('login failures on either process count together, concurrent ones included', async () => {
      const from = '198.51.100.50'
      for (const [i, server] of [a, b, a, b].entries())
        expect((await login(server, email(`n${i}`), 'wrong-password', from)).status).toBe(400)
      expect((await login(a, email('n'), 'wrong-password', from)).status).toBe(429)
      expect((await login(b, email('n'), 'wrong-password', from)).status).toBe(429)

      const victim = await account(a, 'shared-victim')
      const guesses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          login(i % 2 ? a : b, victim, `guess-${i}-xx`, `198.51.101.${i + 1}`),
        ),
      )
      expect(statuses(guesses)).toEqual([...Array(5).fill(400), ...Array(15).fill(429)])
    })

    it('sign-ups and link flows on either process count together', async () => {
      const register = (server: TestServer) =>
        fetch(`${server.url}/api/collections/users/records`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': '192.0.2.50' },
          body: JSON.stringify({
            email: email('r'),
            password: 'password123',
            passwordConfirm: 'password123',
          }),
        })
      expect([
        (await register(a)).status,
        (await register(b)).status,
        (await register(a)).status,
      ]).toEqual([200, 200, 429])

      const start = (server: TestServer) =>
        fetch(`${server.url}/api/auth/start-flow`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': '192.0.2.51' },
          body: JSON.stringify({ device_name: 'Laptop' }),
        })
      expect([(await start(b)).status, (await start(a)).status, (await start(b)).status]).toEqual([
        200, 200, 429,
      ])
    })
  },
)

describe.runIf(redisUrl && databaseUrl)(
  'chat sends on two processes of one deployment count together [postgres+redis]',
  () => {
    let a: TestServer
    let b: TestServer
    beforeAll(async () => {
      a = await startTestServer('postgres', { redisUrl, chatRateLimit: 3 })
      const shared = {
        databaseSchema: a.core.config.databaseSchema,
        dataDir: a.core.config.dataDir,
        redisPrefix: a.core.config.redisPrefix,
      }
      b = await startTestServer('postgres', { redisUrl, chatRateLimit: 3, ...shared })
    })
    afterAll(async () => {
      await b?.close()
      await a?.stop()
    })

    it('accepts at most the limit per user per minute over both processes, concurrent sends included', async () => {
      const pb = await signUp(a, 'twoprocs')
      const model = await modelId(a)
      await servingNode(a, model)
      const conversations = await Promise.all(
        Array.from({ length: 8 }, () => pb.collection('conversations').create({ title: 'Chat' })),
      )
      const sends = await Promise.all(
        conversations.map((c, i) =>
          postJson(
            i % 2 ? a : b,
            '/api/chat/send',
            { conversation_id: c.id, model_id: model, prompt: 'Hi' },
            pb.authStore.token,
          ),
        ),
      )
      expect(sends.map((s) => s.status).sort()).toEqual([
        ...Array(3).fill(200),
        ...Array(5).fill(429),
      ])
    })
  },
)

describe.runIf(redisUrl)('MESHWORK_REDIS_PREFIX isolates deployments on one Redis [redis]', () => {
  let a: TestServer
  let sameDeployment: TestServer
  let other: TestServer
  beforeAll(async () => {
    const prefix = `meshwork-test-iso-${randomUUID()}`
    const config: Partial<Config> = {
      redisUrl,
      trustedProxies: ['127.0.0.1'],
      loginThrottle: { ...noDelays, perAddress: 2, perAccount: 1000 },
    }
    a = await startTestServer('sqlite', { ...config, redisPrefix: prefix })
    sameDeployment = await startTestServer('sqlite', { ...config, redisPrefix: prefix })
    other = await startTestServer('sqlite', {
      ...config,
      redisPrefix: `meshwork-test-iso-other-${randomUUID()}`,
    })
  })
  afterAll(async () => {
    await Promise.all([a?.stop(), sameDeployment?.stop(), other?.stop()])
  })

  it("shares counts and events within a deployment, never with another deployment's", async () => {
    const from = '198.51.100.77'
    for (let i = 0; i < 2; i++)
      expect((await login(a, email('iso'), 'wrong-password', from)).status).toBe(400)
    // The same deployment counts them; the other deployment on the same Redis does not.
    expect((await login(sameDeployment, email('iso'), 'wrong-password', from)).status).toBe(429)
    expect((await login(other, email('iso'), 'wrong-password', from)).status).toBe(400)

    // Record events travel on the deployment's own channels.
    const heard = { same: 0, other: 0 }
    const stops = [
      sameDeployment.core.bus.subscribe('records', () => heard.same++),
      other.core.bus.subscribe('records', () => heard.other++),
    ]
    try {
      await Promise.all([sameDeployment.core.bus.subscribed(), other.core.bus.subscribed()])
      await signUp(a, 'iso-events')
      const deadline = Date.now() + 10_000
      while (heard.same === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
      expect(heard.same).toBeGreaterThan(0)
      // Given the same time again, nothing reached the other deployment.
      await new Promise((r) => setTimeout(r, 300))
      expect(heard.other).toBe(0)
    } finally {
      for (const stop of stops) stop()
    }
  })
})
