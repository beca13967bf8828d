/**
 * A sweep of hostile nodes (and one hostile client of the node WebSocket), each attack one that
 * used to pay off:
 * - job frames out of the protocol's order (job_offer -> job_accepted -> job_chunk... ->
 *   job_done): routing prefers the speed the coordinator measures from a job's acceptance to its
 *   end, and a second acceptance, or text before the first, moved the start of that clock. Each
 *   attack streams for at least SLOW_MS after the coordinator saw the acceptance (or the first
 *   chunk), so its true speed is at most tokens / SLOW_MS;
 * - an answer with nothing in it, paid the whole prompt;
 * - a connection reset during the WebSocket upgrade, an uncaught exception;
 * - a flood of reports, a database write per frame;
 * - "No free job slot" for ever, failing requests that wait for a busy honest node, or, alone
 *   with a model, keeping its requests (and their holds) waiting until their users give up.
 * SQLite and PostgreSQL.
 */
import { connect } from 'node:net'
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelMirror as mirror } from '@meshwork/test-kit'
import { JOB_REJECT_REASONS, type JobOfferFrame } from '@meshwork/protocol'
import {
  ATTEMPT_ENDED,
  FULL_RUN_GAP_MS,
  MAX_OFFERS,
  NO_NODE_MESSAGE,
} from '../../src/core/scheduler/work.ts'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode, type Behaviour, type HostileNode } from '../support/hostile-node.ts'
import { balanceOf, expectAuditPasses, txsOf } from '../support/ledger.ts'
import {
  askStory,
  linkNode,
  requestEnded,
  requestRowOf,
  servingNode,
  waitUntil,
} from '../support/network.ts'

const SLOW_MS = 1500
const WORDS = Array.from({ length: 12 }, (_, i) => `word${i} `)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(dialects)('[%s] hostile nodes: job frames out of order', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    // The coordinator holds the model's tokenizer: it counts the words itself.
    server = await startTestServer(dialect, { modelMirror: mirror })
    stories = await modelId(server)
  })
  afterAll(async () => {
    await server?.stop()
  })

  const db = () => server.core.database.db
  const requestRow = (id: string) => requestRowOf(server, id)
  const ask = (pb: PocketBase) => askStory(server, stories, pb)
  const ended = (id: string) => requestEnded(server, id)

  /** Streams WORDS spread over SLOW_MS. */
  async function slowStream(job: JobOfferFrame, node: HostileNode) {
    for (const word of WORDS) {
      node.chunk(job, word)
      await sleep(SLOW_MS / WORDS.length)
    }
  }

  /** Runs one request on a node with `behaviour`; answers the request and the node's measured speed. */
  async function measure(behaviour: Behaviour) {
    const { node } = await hostileNode(server, stories)
    node.behaviour = behaviour
    try {
      const id = await ask(await signUp(server, 'payer'))
      const done = await ended(id)
      const nm = await db()
        .selectFrom('node_models')
        .select('measured_tokens_per_second')
        .where('node', '=', node.nodeId)
        .executeTakeFirstOrThrow()
      await expectAuditPasses(server)
      return { done, speed: Number(nm.measured_tokens_per_second) }
    } finally {
      node.kill()
    }
  }

  it('accepting again just before job_done does not restart the measured clock', async () => {
    let requestId = ''
    const { done, speed } = await measure(async (job, node) => {
      requestId = job.request_id
      node.accept(job)
      // The coordinator has taken the acceptance once the request shows processing.
      await waitUntil(
        async () => (await requestRow(requestId)).status === 'processing',
        5000,
        'processing',
      )
      await slowStream(job, node)
      node.accept(job)
      await sleep(300)
      node.done(job, WORDS.length)
    })
    expect(done.status).toBe('completed')
    expect(Number(done.tokens_output)).toBeGreaterThanOrEqual(8) // enough to be measured
    expect(speed).toBeGreaterThan(0)
    expect(speed).toBeLessThanOrEqual(Number(done.tokens_output) / (SLOW_MS / 1000))
  })

  it('streaming before accepting does not shorten the measured time either', async () => {
    const { done, speed } = await measure(async (job, node) => {
      await slowStream(job, node)
      node.accept(job)
      await sleep(300)
      node.done(job, WORDS.length)
    })
    expect(done.status).toBe('completed')
    expect(speed).toBeLessThanOrEqual(Number(done.tokens_output) / (SLOW_MS / 1000))
  })

  it('an answer with nothing in it costs the user nothing and earns the node nothing', async () => {
    // Accepting and ending at once, without a word, used to charge the user the whole prompt and
    // pay and credit the node for it, reputation included: money for running no model.
    const { node, owner } = await hostileNode(server, stories)
    node.behaviour = async (job, n) => {
      n.accept(job)
      n.done(job, 0)
    }
    try {
      const payer = await signUp(server, 'payer')
      const before = Number((await owner.collection('nodes').getOne(node.nodeId)).reputation_score)
      const id = await ask(payer)
      const done = await waitUntil(
        async () => {
          const r = await requestRow(id)
          return r.status !== 'pending' && r.status !== 'processing' && r
        },
        10_000,
        'request ended',
      )
      expect(done.status).toBe('completed')
      expect(done.response).toBe('')
      expect(Number(done.cost)).toBe(0)
      const types = (u: PocketBase) =>
        txsOf(server, u.authStore.record!.id).then((t) => t.map((x) => x.type))
      expect(await types(payer)).toEqual(['credit_admin'])
      expect(await types(owner)).not.toContain('credit_inference_request')
      const after = (await owner.collection('nodes').getOne(node.nodeId)).reputation_score
      expect(Number(after)).toBeLessThanOrEqual(before)
      await expectAuditPasses(server)
    } finally {
      node.kill()
    }
  })

  it('a client resetting its connection during the WebSocket upgrade does not end the process', async () => {
    // Once the HTTP server hands an upgrade over, the socket has no error listener of its own: a
    // reset while the credential was checked, or as the 401 went out, was an uncaught exception.
    const { nodeId, credential } = await linkNode(server, await signUp(server, 'owner'))
    const uncaught: unknown[] = []
    const onUncaught = (err: unknown) => uncaught.push(err)
    process.on('uncaughtException', onUncaught)
    try {
      const { port, hostname } = new URL(server.url)
      const auths = [`Bearer ${nodeId}.${credential}`, `Bearer ${nodeId}.wrong`, 'none']
      for (let i = 0; i < 90; i++) {
        await new Promise<void>((resolve) => {
          const socket = connect(Number(port), hostname, () => {
            socket.write(
              `GET ${i % 4 ? '/api/nodes/ws' : '/elsewhere'} HTTP/1.1\r\nHost: x\r\n` +
                'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n' +
                'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
                `Authorization: ${auths[i % 3]}\r\n\r\n`,
            )
            setImmediate(() => {
              socket.resetAndDestroy()
              resolve()
            })
          })
          socket.on('error', () => resolve())
        })
      }
      // The coordinator is still there, and nothing was thrown past it.
      const health = await fetch(new URL('/api/health', server.url))
      expect(health.status).toBe(200)
      expect(uncaught).toEqual([])
    } finally {
      process.off('uncaughtException', onUncaught)
    }
  })

  it('a flood of reports costs a few writes, and the latest report is what is stored', async () => {
    // Every hello, every changed model_status and every status flip used to queue a database
    // write (and a record event to every viewer of the network page): 2000 frames, 2000 writes.
    const { node } = await hostileNode(server, stories)
    try {
      const nodeModel = await db()
        .selectFrom('node_models')
        .select('id')
        .where('node', '=', node.nodeId)
        .executeTakeFirstOrThrow()
      const writes = { nodes: 0, node_models: 0 }
      const stop = server.core.events.on(({ collection, row }) => {
        if (collection.name === 'nodes' && row.id === node.nodeId) writes.nodes++
        if (collection.name === 'node_models' && row.id === nodeModel.id) writes.node_models++
      })
      const FRAMES = 2000
      for (let i = 1; i <= FRAMES; i++) {
        const last = i === FRAMES
        node.send({
          type: 'hello',
          protocol_version: 2,
          agent_version: last ? 'final' : `v${i % 2}`,
          hardware: { cpu_model: 'x', cpu_cores: 1, memory_bytes: 1, gpu: null },
          engines: [],
          max_jobs: 1,
        })
        node.send({ type: 'heartbeat', busy_jobs: last ? 0 : i % 2, max_jobs: 1 })
        node.send({
          type: 'model_status',
          node_model_id: nodeModel.id,
          is_downloaded: true,
          download_progress: last ? 100 : i % 2 ? 10 : 20,
          is_serving: true,
          tokens_per_second: 1,
          error_message: last ? '' : `e${i % 2}`,
        })
      }
      await waitUntil(
        async () => {
          const n = await db()
            .selectFrom('nodes')
            .selectAll()
            .where('id', '=', node.nodeId)
            .executeTakeFirstOrThrow()
          const nm = await db()
            .selectFrom('node_models')
            .selectAll()
            .where('id', '=', nodeModel.id)
            .executeTakeFirstOrThrow()
          return (
            n.agent_version === 'final' &&
            n.status === 'online' &&
            Number(nm.download_progress) === 100 &&
            nm.error_message === ''
          )
        },
        30_000,
        'the latest reports stored',
      )
      await server.network.registry.local(node.nodeId)?.chain
      stop()
      expect(writes.nodes).toBeLessThan(FRAMES / 10)
      expect(writes.node_models).toBeLessThan(FRAMES / 10)
    } finally {
      node.kill()
    }
  })

  it('a node that always says it is full cannot bounce a waiting request until it fails', async () => {
    // "No free job slot" costs a node nothing and the request is offered to it again a moment
    // later (an honest node's count may lag ours). A node saying it for ever used to take every
    // request waiting for a busy honest node through its ten offers to a retryable failure.
    const liar = await servingNode(server, stories)
    liar.node.script = 'reject'
    const { node: honest } = await hostileNode(server, stories)
    let second = ''
    const offersOfSecond = () => liar.node.jobs.filter((j) => j.request_id === second).length
    honest.behaviour = async (job, n) => {
      n.accept(job)
      if (n.jobs.length === 1) {
        // Busy with the first request while the second is offered to the liar more often than
        // a request's offers allow (a pause of 250 ms after each "full").
        await waitUntil(
          () => second && offersOfSecond() > MAX_OFFERS,
          20_000,
          'the liar offered it over and over',
        )
      }
      n.chunk(job, 'Once upon a time')
      n.done(job, 4)
    }
    try {
      const pb = await signUp(server, 'payer')
      const first = await ask(pb)
      await waitUntil(
        () => honest.jobs.length === 1,
        10_000,
        'the first request on the honest node',
      )
      second = await ask(pb)
      for (const id of [first, second]) {
        const done = await ended(id)
        expect(done.status).toBe('completed')
        expect(done.node).toBe(honest.nodeId)
      }
      await expectAuditPasses(server)
    } finally {
      liar.node.kill()
      honest.kill()
    }
  })
})

describe.each(dialects)('[%s] hostile nodes: "full" for ever, alone with a model', (dialect) => {
  // Longer than the gap between two runs of "full", so that a slow liar's answers fall between.
  const STALL_MS = FULL_RUN_GAP_MS * 2
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      { modelMirror: mirror },
      // Offers wait longer than the stall time for an answer: a liar may take its time.
      { network: { scheduler: { stallMs: STALL_MS, offerTimeoutMs: STALL_MS * 4 } } },
    )
    stories = await modelId(server)
  })
  afterAll(async () => {
    await server?.stop()
  })

  const requestRow = (id: string) => requestRowOf(server, id)
  const ask = (pb: PocketBase) => askStory(server, stories, pb)

  it('its request fails retryable once "full" has come without a break for the stall time', async () => {
    const liar = await servingNode(server, stories)
    liar.node.script = 'reject'
    try {
      const pb = await signUp(server, 'payer')
      const user = pb.authStore.record!.id
      const before = await balanceOf(server, user)
      const sentAt = Date.now()
      const id = await ask(pb)
      // The send held credits for it (well before the stall time can have passed).
      expect(Number((await balanceOf(server, user)).held)).toBeGreaterThan(0)
      const failed = await waitUntil(
        async () => {
          const r = await requestRow(id)
          return r.status === 'failed' && r
        },
        STALL_MS * 5,
        'the request failed',
      )
      const waited = Date.now() - sentAt
      // Offered over and over (a pause of 250 ms after each "full"), never counted as offers...
      expect(liar.node.jobs.filter((j) => j.request_id === id).length).toBeGreaterThan(3)
      // ...until the run of "full" answers lasted the stall time.
      expect(waited).toBeGreaterThanOrEqual(STALL_MS)
      expect(failed.error_message).toBe(`${NO_NODE_MESSAGE} (${ATTEMPT_ENDED.full})`)
      expect(failed.can_retry).toBeTruthy()
      // Nothing charged, the hold released.
      const after = await balanceOf(server, user)
      expect(after.balance).toBe(before.balance)
      expect(after.held).toBe(0)
      await expectAuditPasses(server)
    } finally {
      liar.node.kill()
    }
  })

  it('a node saying its model is "not being served" for ever is bounded the same way, and the user reads why', async () => {
    const liar = await servingNode(server, stories)
    const notServing = (job: JobOfferFrame) =>
      liar.node.send({
        type: 'job_rejected',
        job_id: job.job_id,
        reason: JOB_REJECT_REASONS.notServing,
      })
    liar.node.onOffer = notServing
    try {
      const pb = await signUp(server, 'loading')
      const id = await ask(pb)
      const failed = await waitUntil(
        async () => {
          const r = await requestRow(id)
          return r.status === 'failed' && r
        },
        STALL_MS * 5,
        'the request failed',
      )
      expect(liar.node.jobs.filter((j) => j.request_id === id).length).toBeGreaterThan(3)
      expect(failed.error_message).toBe(`${NO_NODE_MESSAGE} (${ATTEMPT_ENDED.loading})`)
      expect(failed.can_retry).toBeTruthy()
      expect((await balanceOf(server, pb.authStore.record!.id)).held).toBe(0)
      await expectAuditPasses(server)
    } finally {
      liar.node.kill()
    }
  })

  it('answering "full" slowly does not break the run', async () => {
    // Each answer comes later than the gap that separates two runs; the next offer does not.
    const { node: liar } = await hostileNode(server, stories)
    liar.behaviour = async (job, n) => {
      await sleep(FULL_RUN_GAP_MS + 500)
      n.send({ type: 'job_rejected', job_id: job.job_id, reason: ATTEMPT_ENDED.full })
    }
    try {
      const id = await ask(await signUp(server, 'payer'))
      const failed = await requestEnded(server, id, STALL_MS * 3)
      expect(failed.status).toBe('failed')
      expect(failed.error_message).toBe(`${NO_NODE_MESSAGE} (${ATTEMPT_ENDED.full})`)
      await expectAuditPasses(server)
    } finally {
      liar.kill()
    }
  })

  it('a request waiting longer than the stall time for a busy honest node is not failed', async () => {
    const { node: honest } = await hostileNode(server, stories)
    let released = false
    honest.behaviour = async (job, n) => {
      n.accept(job)
      // The first job streams a word every 300 ms until released: busy, alive, not lying.
      if (n.jobs.length === 1)
        while (!released) {
          n.chunk(job, 'word ')
          await sleep(300)
        }
      n.chunk(job, 'Once upon a time')
      n.done(job, 4)
    }
    try {
      const pb = await signUp(server, 'payer')
      const first = await ask(pb)
      await waitUntil(() => honest.jobs.length === 1, 10_000, 'the first request on the node')
      const second = await ask(pb)
      await sleep(STALL_MS * 1.5)
      expect((await requestRow(second)).status).toBe('pending')
      released = true
      for (const id of [first, second]) {
        const done = await requestEnded(server, id, 10_000)
        expect(done.status, String(done.error_message)).toBe('completed')
      }
    } finally {
      honest.kill()
    }
  })
})
