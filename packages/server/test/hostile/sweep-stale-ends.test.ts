/**
 * Ending a request reads its hold (`reserved`) and then marks it ended where it is still open. On
 * PostgreSQL (read committed) the mark re-checks the row as it is when it runs, not as it was read:
 * a request failed, then retried by its user between the read and the mark, is open again with a
 * new hold. A late end of its old attempt (a paused process's failure, a survivor's) then ended
 * the new attempt and released the old attempt's hold (none), so the new hold stayed held for
 * ever: `npm run chaos` pausing coordinators found it (the ledger audit failed on "held but its
 * open requests reserve 0"). Every end now marks the request only while it still holds what was
 * read. SQLite runs writes one after another, so there the window does not exist; both run it.
 */
import { describe, expect, it } from 'vitest'
import { failAndPublish } from '../../src/core/scheduler/request-writes.ts'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer } from '../harness.ts'
import { DbFaults } from '../support/db-faults.ts'
import { balanceOf, expectAuditPasses } from '../support/ledger.ts'
import {
  askStory,
  postJson,
  requestEnded,
  requestRowOf,
  servingNode,
  waitUntil,
} from '../support/network.ts'

describe.each(dialects)('[%s] a late end of a retried request', (dialect) => {
  it('leaves the new attempt and its hold alone', async () => {
    const server = await startTestServer(dialect)
    try {
      const stories = await modelId(server)
      const { node } = await servingNode(server, stories)
      const pb = await signUp(server, 'retrier')
      const user = pb.authStore.record!.id
      // The request fails retryable (its node fails it), nothing held any more.
      node.script = 'fail'
      const requestId = await askStory(server, stories, pb)
      expect(await requestEnded(server, requestId)).toMatchObject({
        status: 'failed',
        can_retry: 1,
      })
      // The node is busy with another user's answer, so the retried request waits in the queue.
      node.script = 'hang'
      const other = await askStory(server, stories, await signUp(server, 'other'))
      await waitUntil(() => node.jobs.some((j) => j.request_id === other), 10_000, 'node busy')

      const faults = DbFaults.install(server)
      faults.delay(/^select requests$/, 1500)
      // A late failure of the old attempt: it has read the request (nothing reserved) ...
      const late = failAndPublish(server.core, requestId, 'A late failure of the old attempt')
      await waitUntil(() => faults.delaying.get('select requests') === 1, 5000, 'late read')
      // ... and the user retries before it marks the request.
      const retried = await postJson(
        server,
        '/api/requests/retry',
        { request_id: requestId },
        pb.authStore.token,
      )
      expect(retried.status).toBe(200)
      await late
      faults.clear()

      const row = await requestRowOf(server, requestId)
      expect(row.status).toBe('pending')
      expect(Number(row.reserved)).toBeGreaterThan(0)
      expect((await balanceOf(server, user)).held).toBeGreaterThan(0)
      await expectAuditPasses(server)
      node.kill()
    } finally {
      await server.stop()
    }
  })
})
