/**
 * A sweep of node identity and presence, each attack one that used to pay off or to hurt others:
 * - one node credential on two sockets at once (a cloned node): on one process the newer socket
 *   replaced the older without a word (the agent could not tell a clone from a network fault);
 *   scaled out, both stayed connected, each process gave its own socket jobs and a third process
 *   saw the node move between them at every heartbeat, losing its jobs on it each time;
 * - a node reconnecting in a tight loop: two writes of its row (and their record events) per
 *   connection;
 * - job frames for another node's job.
 * SQLite and PostgreSQL; the scaled-out cases run when TEST_DATABASE_URL and TEST_REDIS_URL are set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NODE_REPLACED_CLOSE_CODE } from '@meshwork/protocol'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startPeerServer, startTestServer, type TestServer } from '../harness.ts'
import { HostileNode, hostileNode, streamThenWait } from '../support/hostile-node.ts'
import { expectAuditPasses } from '../support/ledger.ts'
import {
  askStory,
  requestEnded,
  servingNode,
  waitUntil,
  type FakeNode,
} from '../support/network.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The close code `node`'s socket gets. */
const closeCodeOf = (node: HostileNode) =>
  new Promise<number>((resolve) => node.ws.once('close', (code) => resolve(code)))

/** A second socket of `node`'s credential (a clone of the machine), on `server`. */
async function twinOf(node: HostileNode, server: TestServer) {
  const twin = new HostileNode(server, node.nodeId, node.credential)
  expect(await twin.connect()).toBe('open')
  return twin
}

describe.each(dialects)('[%s] hostile nodes: one credential, many sockets', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    stories = await modelId(server)
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('a second socket replaces the first, which is told why; its job ends once, elsewhere', async () => {
    const { node: first } = await hostileNode(server, stories)
    first.behaviour = streamThenWait('Once')
    let other: FakeNode | null = null
    let twin: HostileNode | null = null
    try {
      const pb = await signUp(server, 'payer')
      const id = await askStory(server, stories, pb)
      const job = await first.firstJob()
      // Another owner's node, for the job to go to.
      other = (await servingNode(server, stories)).node
      other.chunks = ['Elsewhere']
      const code = closeCodeOf(first)
      twin = await twinOf(first, server)
      // The older socket hears that a newer one took its place (not a bare drop, 1006).
      expect(await code).toBe(NODE_REPLACED_CLOSE_CODE)
      expect(server.network.registry.local(first.nodeId)?.ws).toBeDefined()
      expect(server.network.registry.counts().local).toBe(2)
      // Its job went to another node and was paid once.
      const done = await requestEnded(server, id)
      expect(done).toMatchObject({ status: 'completed', response: 'Elsewhere', node: other.nodeId })
      expect(twin.jobs.map((j) => j.request_id)).not.toContain(job.request_id)
      await expectAuditPasses(server)
    } finally {
      first.kill()
      twin?.kill()
      other?.kill()
    }
  })

  it('another node’s job: chunks and job_done for it are ignored, it is not paid', async () => {
    const { node: honest } = await hostileNode(server, stories)
    const { node: thief, owner: thiefOwner } = await hostileNode(server, stories)
    thief.script = 'reject'
    let forged = false
    honest.behaviour = async (job, n) => {
      n.accept(job)
      // The thief knows the job's id (it must not matter how) and ends it first, with its text.
      thief.send({ type: 'job_accepted', job_id: job.job_id })
      thief.chunk(job, 'Stolen answer, paid to the thief')
      thief.done(job, 500)
      thief.send({ type: 'heartbeat', busy_jobs: 0, max_jobs: 1 })
      forged = true
      await sleep(300)
      n.chunk(job, 'Once upon a time')
      n.done(job, 4)
    }
    try {
      const pb = await signUp(server, 'payer')
      const id = await askStory(server, stories, pb)
      const done = await requestEnded(server, id)
      expect(forged).toBe(true)
      expect(done).toMatchObject({
        status: 'completed',
        response: 'Once upon a time',
        node: honest.nodeId,
      })
      const earned = await thiefOwner
        .collection('user_credit_txs')
        .getFullList({ filter: 'type = "credit_inference_request"' })
      expect(earned).toEqual([])
      await expectAuditPasses(server)
    } finally {
      honest.kill()
      thief.kill()
    }
  })

  it('a node reconnecting in a tight loop costs no write per connection; other jobs go on', async () => {
    const { node } = await hostileNode(server, stories)
    const { node: honest } = await servingNode(server, stories)
    honest.chunkDelayMs = 200
    node.script = 'reject'
    let writes = 0
    const stop = server.core.events.on(({ collection, row }) => {
      if (collection.name === 'nodes' && row.id === node.nodeId) writes++
    })
    try {
      const pb = await signUp(server, 'payer')
      const id = await askStory(server, stories, pb)
      const LOOPS = 300
      for (let i = 0; i < LOOPS; i++) {
        node.kill()
        expect(await node.connect()).toBe('open')
      }
      await waitUntil(
        async () => {
          const row = await server.core.database.db
            .selectFrom('nodes')
            .select('status')
            .where('id', '=', node.nodeId)
            .executeTakeFirstOrThrow()
          return row.status === 'online'
        },
        10_000,
        'the node stored online',
      )
      await server.network.registry.local(node.nodeId)?.chain
      stop()
      expect(writes).toBeLessThan(LOOPS / 10)
      // Nothing is kept per connection: one session, the one connected now.
      expect(server.network.registry.counts().local).toBe(2)
      const done = await requestEnded(server, id)
      expect(done).toMatchObject({ status: 'completed', node: honest.nodeId })
      await expectAuditPasses(server)
    } finally {
      stop()
      node.kill()
      honest.kill()
    }
  })
})

describe.runIf(redisUrl && databaseUrl)('one credential on two coordinators [postgres]', () => {
  let a: TestServer
  let b: TestServer
  let stories: string
  beforeAll(async () => {
    const network = { heartbeatTimeoutMs: 1500, scheduler: { stallMs: 1500, offerTimeoutMs: 1500 } }
    a = await startTestServer('postgres', { redisUrl }, { network })
    b = await startPeerServer(a, { redisUrl }, { network })
    stories = await modelId(a)
  })
  afterAll(async () => {
    await b?.close()
    await a?.stop()
  })

  it('the newer socket wins: the one on the other process is closed, told why, its job elsewhere', async () => {
    const { node: first } = await hostileNode(a, stories)
    first.behaviour = streamThenWait('Once')
    let other: FakeNode | null = null
    let twin: HostileNode | null = null
    try {
      const pb = await signUp(a, 'payer')
      const id = await askStory(a, stories, pb)
      await first.firstJob()
      other = (await servingNode(a, stories)).node
      other.chunks = ['Elsewhere']
      const code = closeCodeOf(first)
      twin = await twinOf(first, b)
      expect(await code).toBe(NODE_REPLACED_CLOSE_CODE)
      // A knows the node as B's now, and gives it jobs there.
      await waitUntil(
        () => !a.network.registry.local(first.nodeId) && a.network.registry.get(first.nodeId),
        3000,
        'A knows the node on B',
      )
      const done = await requestEnded(a, id)
      expect(done).toMatchObject({ status: 'completed', response: 'Elsewhere', node: other.nodeId })
      other.kill()
      const next = await askStory(a, stories, pb)
      expect(await requestEnded(a, next)).toMatchObject({ status: 'completed', node: first.nodeId })
      expect(twin.jobs.map((j) => j.request_id)).toContain(next)
      await expectAuditPasses(a)
    } finally {
      first.kill()
      twin?.kill()
      other?.kill()
    }
  })

  it('two sockets connecting at once, one on each process: exactly one stays', async () => {
    const { node: first } = await hostileNode(a, stories)
    first.kill()
    const left = new HostileNode(a, first.nodeId, first.credential)
    const right = new HostileNode(b, first.nodeId, first.credential)
    try {
      await Promise.all([left.connect(), right.connect()])
      await sleep(1500)
      const open = [left, right].filter((n) => n.ws.readyState === n.ws.OPEN)
      expect(open).toHaveLength(1)
      const holders = [a, b].filter((s) => s.network.registry.local(first.nodeId))
      expect(holders).toHaveLength(1)
    } finally {
      left.kill()
      right.kill()
    }
  })
})
