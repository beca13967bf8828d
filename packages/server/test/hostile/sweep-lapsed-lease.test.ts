/**
 * A coordinator process whose lease lapsed while it ran on (a pause longer than the lease, or cut
 * off from Redis while PostgreSQL still answers) has had its requests taken over by a survivor
 * (takeover.ts: one UPDATE of `requests.lease_owner`). The survivor runs them; the lapsed process
 * must neither run them a second time nor end them: at each of its steps (recording the job, the
 * node's acceptance, the settlement) it finds the request no longer its own, stops its node's job
 * and forgets the request, writing nothing. The survivor's claim is written here by the test, so
 * each step is hit exactly; takeover.test.ts runs the takeover itself between two processes.
 * SQLite and PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import type { JobOfferFrame } from '@meshwork/protocol'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { balanceOf, expectAuditPasses } from '../support/ledger.ts'
import { failAndPublish } from '../../src/core/scheduler/request-writes.ts'
import { TAKEN_OVER_MESSAGE } from '../../src/core/scheduler/takeover.ts'
import {
  FakeNode,
  askStory,
  linkedNode,
  postJson,
  requestRowOf,
  waitUntil,
} from '../support/network.ts'

/** The survivor's process id, as its claim writes it. */
const SURVIVOR = 'survivor-process'

/** A node that holds each offer until the test lets it go on. */
class GatedNode extends FakeNode {
  private opened: Promise<void> = Promise.resolve()
  private open: () => void = () => {}
  gate() {
    this.opened = new Promise((resolve) => (this.open = resolve))
  }
  letGo() {
    this.open()
  }
  offers: JobOfferFrame[] = []
  protected override async run(job: JobOfferFrame) {
    this.offers.push(job)
    await this.opened
    return super.run(job)
  }
}

describe.each(dialects)(
  '[%s] a process whose lease lapsed leaves taken-over requests alone',
  (dialect) => {
    let server: TestServer
    let stories: string
    let node: GatedNode
    beforeAll(async () => {
      server = await startTestServer(
        dialect,
        {},
        {
          // Each step's own fence is what is shown here, not the periodic check (running-check.ts,
          // sweep-ended-elsewhere.test.ts) that would often find the claim first.
          network: { scheduler: { stallMs: 120_000, runningCheckMs: 600_000 } },
        },
      )
      stories = await modelId(server)
      const owner = await signUp(server, 'provider')
      const make = (nodeId: string, credential: string) =>
        new GatedNode(server, nodeId, credential, 1)
      ;({ node } = await linkedNode(server, stories, owner, make))
    })
    afterAll(async () => {
      node.kill()
      await server.stop()
    })

    const claimBySurvivor = (requestId: string) =>
      server.core.database.db
        .updateTable('requests')
        .set({ lease_owner: SURVIVOR })
        .where('id', '=', requestId)
        .execute()
    const cancelled = (jobId: string) =>
      node.frames.some((f) => f.type === 'job_cancel' && f.job_id === jobId)
    const offersOf = (requestId: string) => node.offers.filter((o) => o.request_id === requestId)
    const jobRowsOf = (requestId: string) =>
      server.core.database.db
        .selectFrom('node_jobs')
        .select(['id', 'status'])
        .where('request', '=', requestId)
        .execute()
    const stop = (pb: PocketBase, requestId: string) =>
      postJson(server, '/api/requests/cancel', { request_id: requestId }, pb.authStore.token)

    /** The request still open, untouched: as the survivor will find it. */
    async function expectLeftToSurvivor(requestId: string, user: string, held: number) {
      const row = await requestRowOf(server, requestId)
      expect(row).toMatchObject({ lease_owner: SURVIVOR })
      expect(['pending', 'processing']).toContain(row.status)
      expect(Number(row.reserved)).toBeGreaterThan(0)
      expect(row.response).toBe('')
      expect((await balanceOf(server, user)).held).toBe(held)
      await expectAuditPasses(server)
    }

    it('a queued request claimed meanwhile: its offer is taken back, no job row, nothing ended', async () => {
      node.script = 'hang'
      const pb = await signUp(server, 'queued')
      const user = pb.authStore.record!.id
      const running = await askStory(server, stories, pb)
      await waitUntil(() => offersOf(running).length === 1, 10_000, 'first request offered')
      const queued = await askStory(server, stories, pb)
      await claimBySurvivor(queued)
      node.script = 'stream'
      // The slot comes free: this process offers the queued request, then finds it is not its own.
      expect((await stop(pb, running)).status).toBe(200)
      const held = (await balanceOf(server, user)).held as number
      await waitUntil(() => offersOf(queued).length === 1, 10_000, 'queued request offered')
      const [offer] = offersOf(queued)
      await waitUntil(() => cancelled(offer.job_id), 10_000, 'offer taken back')
      // What the node then sends is not this process's any more.
      await new Promise((r) => setTimeout(r, 300))
      expect(await jobRowsOf(queued)).toEqual([])
      await expectLeftToSurvivor(queued, user, held)
    })

    it('claimed between the offer and its acceptance: the job stops, the request stays open', async () => {
      node.script = 'stream'
      node.gate()
      const pb = await signUp(server, 'accepting')
      const user = pb.authStore.record!.id
      const requestId = await askStory(server, stories, pb)
      await waitUntil(() => offersOf(requestId).length === 1, 10_000, 'request offered')
      const [offer] = offersOf(requestId)
      await waitUntil(async () => (await jobRowsOf(requestId)).length === 1, 10_000, 'job recorded')
      await claimBySurvivor(requestId)
      const held = (await balanceOf(server, user)).held as number
      node.letGo() // accepted, streamed and done: none of it is this process's to record
      await waitUntil(() => cancelled(offer.job_id), 10_000, 'job stopped')
      await new Promise((r) => setTimeout(r, 300))
      expect((await requestRowOf(server, requestId)).status).toBe('pending')
      await expectLeftToSurvivor(requestId, user, held)
    })

    it('claimed while its answer streamed: the answer is not settled here, nothing charged', async () => {
      node.script = 'hang'
      const pb = await signUp(server, 'settling')
      const user = pb.authStore.record!.id
      const before = await balanceOf(server, user)
      const requestId = await askStory(server, stories, pb)
      await waitUntil(
        async () => (await requestRowOf(server, requestId)).status === 'processing',
        10_000,
        'request running',
      )
      const [offer] = offersOf(requestId)
      await claimBySurvivor(requestId)
      // The survivor's claim ends the jobs it found (takeover.ts `adopt`).
      await server.core.database.db
        .updateTable('node_jobs')
        .set({ status: 'failed' })
        .where('request', '=', requestId)
        .execute()
      node.send({
        type: 'job_done',
        job_id: offer.job_id,
        tokens_input: 5,
        tokens_output: 2,
        processing_time_ms: 42,
      })
      await new Promise((r) => setTimeout(r, 500))
      const row = await requestRowOf(server, requestId)
      expect(row.status).toBe('processing')
      expect(row.lease_owner).toBe(SURVIVOR)
      // The job stays as the survivor ended it, not `completed` by the late news of its end.
      expect(await jobRowsOf(requestId)).toEqual([{ id: offer.job_id, status: 'failed' }])
      const after = await balanceOf(server, user)
      expect(after.balance).toBe(before.balance)
      expect(after.held).toBeGreaterThan(0)
      expect(cancelled(offer.job_id)).toBe(false) // its node had finished; nothing to stop
      await expectAuditPasses(server)
    })

    it('failed by the survivor and retried here: the old attempt stops, the new one runs once', async () => {
      node.script = 'hang'
      const pb = await signUp(server, 'retrying')
      const requestId = await askStory(server, stories, pb)
      await waitUntil(
        async () => (await requestRowOf(server, requestId)).status === 'processing',
        10_000,
        'request running',
      )
      const [old] = offersOf(requestId)
      // The survivor claims the running request and fails it retryable (takeover.ts `adopt`).
      await claimBySurvivor(requestId)
      await failAndPublish(server.core, requestId, TAKEN_OVER_MESSAGE)
      node.script = 'stream'
      const retried = await postJson(
        server,
        '/api/requests/retry',
        { request_id: requestId },
        pb.authStore.token,
      )
      expect(retried.status).toBe(200)
      await waitUntil(
        async () => (await requestRowOf(server, requestId)).status === 'completed',
        10_000,
        'retried request answered',
      )
      expect(cancelled(old.job_id)).toBe(true)
      expect(offersOf(requestId)).toHaveLength(2)
      const jobs = await jobRowsOf(requestId)
      expect(jobs.filter((j) => j.status === 'completed')).toHaveLength(1)
      expect(await requestRowOf(server, requestId)).toMatchObject({
        response: 'Once upon a time',
        reserved: 0,
      })
      await expectAuditPasses(server)
    })
  },
)
