/**
 * A PostgreSQL that stops answering: the connections stay open and nothing comes back (a network
 * partition, a frozen host). The coordinator reaches the database through a TCP forwarder the
 * test stalls (`test/support/tcp-cut.ts`), then resumes or cuts. Every request must be answered
 * within a bound (503 in PocketBase's shape while the database is silent), the pool must serve
 * again once the stall ends, and a settlement whose COMMIT stalls must be paid once. Each case
 * either pins a bug found by this sweep (it failed before its fix) or shows, once, behaviour that
 * was already right. Runs when TEST_DATABASE_URL is set.
 */
import pg from 'pg'
import type PocketBase from 'pocketbase'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { signUp, startTestServer, type TestServer } from '../harness.ts'
import { balanceOf, expectAuditPasses } from '../support/ledger.ts'
import { postJson, requestRowOf, servingNode, waitUntil } from '../support/network.ts'
import { filtered, openStream, postSubscriptions } from '../support/sse.ts'
import { startTcpCut, type TcpCut } from '../support/tcp-cut.ts'
import { unhandledDuringSuite } from '../support/unhandled.ts'
import { newRecordId } from '../../src/tools/ids.ts'

const databaseUrl = process.env.TEST_DATABASE_URL

/** The longest a request may take while the database is silent: the client gives a statement 7 s,
 * a connection 5 s (src/db/postgres-pool.ts), plus a margin. */
const BOUND_MS = 10_000
const unavailable = { status: 503, message: 'The service is temporarily unavailable.', data: {} }
const unhealthy = { message: 'API is not healthy: the database cannot be reached.', code: 503 }
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A call as the web app makes it, and its answer (status, body) while the database is silent. */
type Probe = [
  name: string,
  run: (signal: AbortSignal) => Promise<Response>,
  status: number,
  body?: unknown,
]

function probes(server: TestServer, pb: PocketBase, conversation: string, model: string): Probe[] {
  const json = { 'content-type': 'application/json' }
  const auth = { ...json, authorization: pb.authStore.token }
  const at = (path: string) => `${server.url}${path}`
  const get = (path: string) => (signal: AbortSignal) => fetch(at(path), { headers: auth, signal })
  const post = (path: string, body: unknown, headers: Record<string, string> = auth) => {
    return (signal: AbortSignal) =>
      fetch(at(path), { method: 'POST', headers, body: JSON.stringify(body), signal })
  }
  const records = '/api/collections/conversations/records'
  const signIn = { identity: pb.authStore.record!.email, password: 'password123' }
  const send = { conversation_id: conversation, model_id: model, prompt: 'Hi' }
  return [
    ['health', get('/api/health'), 503, { ...unhealthy, data: {} }],
    ['records list', get(records), 503, unavailable],
    ['record view', get(`${records}/${conversation}`), 503, unavailable],
    ['record create', post(records, { title: 'During the stall' }), 503, unavailable],
    ['sign-in', post('/api/collections/users/auth-with-password', signIn, json), 503, unavailable],
    ['chat send', post('/api/chat/send', send), 503, unavailable],
    // Opening a stream needs no database (without Redis, the directory is in memory).
    ['realtime connect', openRealtime(at('/api/realtime')), 200],
  ]
}

/** GET /api/realtime, read until its first frame (PB_CONNECT), then closed. */
function openRealtime(url: string) {
  return async (signal: AbortSignal) => {
    const res = await fetch(url, { signal })
    if (res.status !== 200) return res
    const reader = res.body!.getReader()
    const first = await reader.read()
    await reader.cancel()
    return new Response(first.value, { status: 200 })
  }
}

/** Every probe at once: [name, status, body (when the probe names one)], or status 0: no answer
 * within BOUND_MS (a hang). */
function round(list: Probe[]) {
  return Promise.all(
    list.map(async ([name, run, , want]) => {
      try {
        const res = await run(AbortSignal.timeout(BOUND_MS))
        const body = await res.text()
        return [name, res.status, want === undefined ? undefined : JSON.parse(body)]
      } catch (err) {
        return [name, 0, `no answer within ${BOUND_MS} ms (${String(err)})`]
      }
    }),
  )
}

/**
 * Calls `onCommit` just before the COMMIT of a transaction that ran a statement `marks` (by its
 * SQL text and values) goes out on a connection to `port`. Kysely's statements reach pg's
 * Client.query.
 */
function beforeCommitOf(
  port: number,
  marks: (text: string, values: unknown[] | undefined) => boolean,
  onCommit: () => void,
): () => void {
  const query = pg.Client.prototype.query
  const marked = new WeakSet<pg.Client>()
  pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
    const text = typeof config === 'string' ? config : ''
    if (this.port === port) {
      if (marks(text, rest[0] as unknown[] | undefined)) marked.add(this)
      if (text === 'commit' && marked.delete(this)) onCommit()
    }
    return (query as (...a: unknown[]) => unknown).call(this, config, ...rest)
  } as typeof query
  return () => (pg.Client.prototype.query = query)
}

/** A settlement: the transaction that marks a request completed. */
const settlement = (text: string, values: unknown[] | undefined) =>
  text.startsWith('update "requests" set "status" = $1') && values?.[0] === 'completed'
/** A send: the transaction that stores a new request. */
const send = (text: string) => text.startsWith('insert into "requests"')

describe.runIf(databaseUrl)('PostgreSQL stalled [postgres]', () => {
  const unhandled = unhandledDuringSuite()
  let cut: TcpCut
  let server: TestServer
  /** Each case's nodes, gone after it (a node left connected would take the next case's job). */
  const nodes: Array<{ kill(): void }> = []
  beforeAll(async () => {
    const target = new URL(databaseUrl!)
    cut = await startTcpCut(target.hostname, Number(target.port || 5432))
    server = await startTestServer('postgres', { databaseUrl: cut.through(databaseUrl!) })
  })
  afterEach(async () => {
    for (const node of nodes.splice(0)) node.kill()
    // Whatever a case left stalled is cut, and the forwarder serves again for the next one.
    if (cut.stalled) await cut.cut()
    await cut.restore()
    const health = async () => (await fetch(`${server.url}/api/health`)).status === 200
    await waitUntil(health, 30_000, 'healthy')
    expect(unhandled).toEqual([])
  })
  afterAll(async () => {
    await server.stop()
    await cut.close()
  })

  const schema = () => server.core.config.databaseSchema
  /** A connection of the test's own, straight to PostgreSQL (as an operator's psql). */
  async function direct() {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    return client
  }

  async function user(name: string) {
    const stories = await modelId(server)
    const pb = await signUp(server, name)
    const conversation = await pb.collection('conversations').create({ title: 'Stall' })
    return { stories, pb, conversation: conversation.id as string }
  }

  it('stalled: every request is answered within the bound (503 in PocketBase shape), and all again once it resumes', async () => {
    const { stories, pb, conversation } = await user('stalled')
    nodes.push((await servingNode(server, stories)).node)
    const list = probes(server, pb, conversation, stories)
    const stalled = list.map(([name, , status, body]) => [name, status, body])
    cut.stall()
    // The first round finds the pool's idle connections (stalled); the second finds the pool
    // full of what the first left behind.
    expect(await round(list)).toEqual(stalled)
    expect(await round(list)).toEqual(stalled)
    cut.resume()
    const ok = async () => (await round(list)).every(([, status]) => status === 200)
    await waitUntil(ok, BOUND_MS, 'every request answered after the stall')
  }, 90_000)

  it('stalled until the connections are cut: the pool serves again at once', async () => {
    const { stories, pb, conversation } = await user('stallcut')
    const list = probes(server, pb, conversation, stories).filter(([name]) => name !== 'chat send')
    cut.stall()
    // More calls than the pool has connections, all waiting on the silent database.
    const waiting = Promise.all(Array.from({ length: 4 }, () => round(list)))
    await sleep(3000)
    await cut.cut()
    await cut.restore()
    await waiting
    const started = Date.now()
    const answers = await round(list)
    expect(answers.map(([name, status]) => [name, status])).toEqual(list.map(([n]) => [n, 200]))
    expect(Date.now() - started).toBeLessThan(5000)
  }, 60_000)

  it('a row locked for ever by another session: the write is answered 503 within the bound, and nothing of it lands later', async () => {
    const { pb, conversation } = await user('locked')
    const admin = await direct()
    const table = `${schema()}.conversations`
    const patch = () =>
      fetch(`${server.url}/api/collections/conversations/records/${conversation}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', authorization: pb.authStore.token },
        body: JSON.stringify({ title: 'While locked' }),
        signal: AbortSignal.timeout(BOUND_MS),
      })
    try {
      await admin.query('BEGIN')
      await admin.query(`SELECT 1 FROM ${table} WHERE id = $1 FOR UPDATE`, [conversation])
      const res = await patch()
      expect([res.status, await res.json()]).toEqual([503, unavailable])
    } finally {
      await admin.query('ROLLBACK')
      await admin.end()
    }
    // PostgreSQL ended the statement itself: it does not run once the lock is free.
    await sleep(500)
    expect((await pb.collection('conversations').getOne(conversation)).title).toBe('Stall')
    expect((await patch()).status).toBe(200)
  }, 30_000)

  /**
   * A request whose node has streamed 'Once upon', watched on a realtime stream; its node ends it
   * and the forwarder stalls (`which`) just as the settlement sends its COMMIT.
   */
  async function stalledAtCommit(name: string, which: 'both' | 'answers') {
    const { stories, pb, conversation } = await user(name)
    const { node } = await servingNode(server, stories)
    nodes.push(node)
    node.script = 'hang' // streams 'Once', ' upon', then waits for the test to end it
    node.chunkDelayMs = 0
    const send = { conversation_id: conversation, model_id: stories, prompt: 'Hello' }
    const sent = await postJson(server, '/api/chat/send', send, pb.authStore.token)
    const id = sent.body.request_id as string
    await waitUntil(() => node.jobs.length === 1, 10_000, 'job reached the node')
    await sleep(300) // its two chunks streamed
    const stream = await openStream(server.url)
    const subscription = [filtered('requests', `id = "${id}"`)]
    await postSubscriptions(server.url, stream.clientId, subscription, pb.authStore.token)
    let committing = false
    const restore = beforeCommitOf(cut.port, settlement, () => {
      cut.stall(which)
      committing = true
    })
    const done = { job_id: node.jobs[0].job_id, tokens_input: 1, tokens_output: 2 }
    node.send({ type: 'job_done', ...done, processing_time_ms: 42 })
    await waitUntil(() => committing, 10_000, 'the settlement committing').finally(restore)
    const told = () =>
      stream.events.some((e) => (e.data.record as { status?: string }).status === 'completed')
    return { id, user: pb.authStore.record!.id, told }
  }

  /** The COMMIT reaches PostgreSQL (the request is settled there) and its answer never comes
   * back before the client's bound: the settlement gives up on it and tries again. */
  async function commitAnswerLost(name: string) {
    const r = await stalledAtCommit(name, 'answers')
    const admin = await direct()
    const row = `SELECT status FROM ${schema()}.requests WHERE id = $1`
    const committed = async () => (await admin.query(row, [r.id])).rows[0]?.status === 'completed'
    await waitUntil(committed, 5000, 'committed').finally(() => admin.end())
    await sleep(BOUND_MS)
    cut.resume()
    return r
  }

  /** Settled once: completed with the node's answer, charged once, nothing held, audit clean. */
  async function expectPaidOnce(r: { id: string; user: string }) {
    const completed = async () => (await requestRowOf(server, r.id)).status === 'completed'
    await waitUntil(completed, 30_000, 'request completed')
    const row = await requestRowOf(server, r.id)
    expect(row).toMatchObject({ reserved: 0, response: 'Once upon' })
    expect(Number(row.cost)).toBeGreaterThan(0)
    const balance = await balanceOf(server, r.user)
    expect(balance).toMatchObject({ held: 0, total_spent: Number(row.cost) / 1000 })
    await expectAuditPasses(server)
  }

  it('a settlement whose COMMIT ran but whose answer never came back: paid once, the retry changes nothing', async () => {
    await expectPaidOnce(await commitAnswerLost('commitlost'))
  }, 90_000)

  // The retry finds the request ended: it publishes it then (before, it published nothing and the
  // user's screen showed the request running until a reload).
  it('a settlement whose COMMIT answer was lost still tells the user', async () => {
    const r = await commitAnswerLost('commitlosttold')
    await expectPaidOnce(r)
    await waitUntil(r.told, 10_000, 'completion on the stream')
  }, 90_000)

  it('a settlement whose COMMIT never arrived: its locks are freed while the stall lasts; cut, the answer is kept and paid once', async () => {
    const r = await stalledAtCommit('commitcut', 'both')
    // Its transaction is open on the server, which waits for the COMMIT: the request's row (and
    // the balance's, the node's) stayed locked, every other process's write to them waiting, for
    // as long as the partition lasted. PostgreSQL ends that session after 10 s idle.
    const admin = await direct()
    const row = `SELECT 1 FROM ${schema()}.requests WHERE id = $1`
    const free = async () => {
      await admin.query('BEGIN')
      const taken = await admin.query(`${row} FOR UPDATE NOWAIT`, [r.id]).catch(() => null)
      await admin.query('ROLLBACK')
      return taken !== null
    }
    await waitUntil(free, 15_000, 'the locks released').finally(() => admin.end())
    await cut.cut()
    await cut.restore()
    await expectPaidOnce(r)
    await waitUntil(r.told, 10_000, 'completion on the stream')
  }, 90_000)

  it('a send whose COMMIT ran but whose answer never came back (503): its request still runs, once, and sending it again answers it', async () => {
    const { stories, pb, conversation } = await user('sendlost')
    const { node } = await servingNode(server, stories)
    nodes.push(node)
    const message = {
      conversation_id: conversation,
      model_id: stories,
      prompt: 'Hello',
      idempotency_key: newRecordId(),
    }
    const restore = beforeCommitOf(cut.port, send, () => cut.stall('answers'))
    const sending = postJson(server, '/api/chat/send', message, pb.authStore.token)
    const admin = await direct()
    const stored = `SELECT id FROM ${schema()}.requests WHERE idempotency_key = $1`
    const landed = async () =>
      (await admin.query(stored, [message.idempotency_key])).rows[0]?.id as string | undefined
    const id = await waitUntil(landed, 10_000, 'the send committed').finally(() => admin.end())
    restore()
    // The client hears 503; the request is stored, its credits held.
    expect(await sending).toMatchObject({ status: 503, body: unavailable })
    cut.resume()
    // Nobody will send it again: it runs all the same (before, it stayed pending and held for as
    // long as the process lived).
    const completed = async () => (await requestRowOf(server, id)).status === 'completed'
    await waitUntil(completed, 30_000, 'the request completed')
    expect(node.jobs).toHaveLength(1)
    // Sent again under its key, the answer is that request; nothing more runs or is charged.
    const again = await postJson(server, '/api/chat/send', message, pb.authStore.token)
    expect(again).toMatchObject({ status: 200, body: { request_id: id, repeated: true } })
    const row = await requestRowOf(server, id)
    expect(row.reserved).toBe(0)
    const balance = await balanceOf(server, pb.authStore.record!.id)
    expect(balance).toMatchObject({ held: 0, total_spent: Number(row.cost) / 1000 })
    expect(node.jobs).toHaveLength(1)
    await expectAuditPasses(server)
  }, 90_000)
})
