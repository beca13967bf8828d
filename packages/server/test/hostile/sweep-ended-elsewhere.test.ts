/**
 * A request can be ended, or taken, behind the back of the process running it: scaled out, the
 * process a user's cancel reaches ends a request it does not own when the owner cannot be told
 * (the bus is down: stop-request.ts), and a survivor takes over the requests of a process it took
 * for dead (a pause, a partition). Nothing then reaches the owner, whose node ran the job to its
 * end, its slot busy, and whose queue still held the request. The owner now asks the database
 * every few seconds (scheduler/running-check.ts): what ended or moved is stopped and forgotten.
 * The other process's writes are made here by the test, so no bus can carry the news.
 * SQLite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest'
import { cancelAndPublish } from '../../src/core/scheduler/request-writes.ts'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer } from '../harness.ts'
import { expectAuditPasses } from '../support/ledger.ts'
import {
  askStory,
  postJson,
  requestEnded,
  requestRowOf,
  servingNode,
  waitUntil,
} from '../support/network.ts'

const network = { scheduler: { stallMs: 120_000, runningCheckMs: 300 } }

describe.each(dialects)('[%s] a request ended or taken elsewhere', (dialect) => {
  it('running: its node is told to stop, and its slot serves the next request', async () => {
    const server = await startTestServer(dialect, {}, { network })
    try {
      const stories = await modelId(server)
      const { node } = await servingNode(server, stories)
      node.script = 'hang'
      const pb = await signUp(server, 'cancelled-elsewhere')
      const requestId = await askStory(server, stories, pb)
      await waitUntil(
        async () => (await requestRowOf(server, requestId)).status === 'processing',
        10_000,
        'running',
      )
      const [job] = node.jobs
      // Another process ended it (a cancel it could not pass on), this one was not told.
      await cancelAndPublish(server.core, {
        requestId,
        nodeId: '',
        response: '',
        tokensInput: 0,
        tokensOutput: 0,
        processingTimeMs: 0,
      })
      await waitUntil(
        () => node.frames.some((f) => f.type === 'job_cancel' && f.job_id === job.job_id),
        10_000,
        'job stopped',
      )
      node.script = 'stream'
      const next = await askStory(server, stories, pb)
      expect(await requestEnded(server, next, 10_000)).toMatchObject({ status: 'completed' })
      expect((await requestRowOf(server, requestId)).status).toBe('cancelled')
      await expectAuditPasses(server)
      node.kill()
    } finally {
      await server.stop()
    }
  })

  it('queued: it leaves the queue and is never offered here', async () => {
    const server = await startTestServer(dialect, {}, { network })
    try {
      const stories = await modelId(server)
      const { node } = await servingNode(server, stories)
      node.script = 'hang'
      const pb = await signUp(server, 'taken-elsewhere')
      const running = await askStory(server, stories, pb)
      await waitUntil(() => node.jobs.length === 1, 10_000, 'node busy')
      const queued = await askStory(server, stories, pb)
      // A survivor claimed it (takeover.ts): it runs it, not this process.
      await server.core.database.db
        .updateTable('requests')
        .set({ lease_owner: 'survivor-process' })
        .where('id', '=', queued)
        .execute()
      await new Promise((r) => setTimeout(r, 1000)) // a few checks
      node.script = 'stream'
      const stop = { request_id: running }
      expect(
        (await postJson(server, '/api/requests/cancel', stop, pb.authStore.token)).status,
      ).toBe(200)
      const next = await askStory(server, stories, pb) // the freed slot serves a new request
      expect(await requestEnded(server, next, 10_000)).toMatchObject({ status: 'completed' })
      expect(node.jobs.filter((j) => j.request_id === queued)).toEqual([])
      expect(await requestRowOf(server, queued)).toMatchObject({
        status: 'pending',
        lease_owner: 'survivor-process',
      })
      await expectAuditPasses(server)
      node.kill()
    } finally {
      await server.stop()
    }
  })
})
