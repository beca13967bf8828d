/**
 * Red team: a node that accepts a job, streams part of the answer, then says `job_rejected` "No
 * free job slot" (a frame the protocol allows only instead of `job_accepted`). "Full" costs a node
 * nothing and the request is offered to it again a moment later; its acceptance had reset the run
 * of "full" answers that bounds such a wait, so the cycle (accept, stream, "full") never ended:
 * the request stayed open with its hold for ever, its user shown text that was thrown away again
 * and again, and the node lost no reputation. A rejection after an acceptance is a failure.
 * SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelMirror as mirror } from '@meshwork/test-kit'
import { ATTEMPT_ENDED, FULL_RUN_GAP_MS, NO_NODE_MESSAGE } from '../../src/core/scheduler/work.ts'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode } from '../support/hostile-node.ts'
import { balanceOf, expectAuditPasses } from '../support/ledger.ts'
import { askStory, requestEnded } from '../support/network.ts'

const STALL_MS = FULL_RUN_GAP_MS * 2
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(dialects)('[%s] red team: job_rejected after job_accepted', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      { modelMirror: mirror },
      { network: { scheduler: { stallMs: STALL_MS, offerTimeoutMs: STALL_MS * 4 } } },
    )
    stories = await modelId(server)
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('accept, stream, then "No free job slot": the request ends, the node pays for it, nothing charged', async () => {
    const { node: liar } = await hostileNode(server, stories)
    liar.behaviour = async (job, n) => {
      n.accept(job)
      n.chunk(job, 'Once upon a time ')
      // Well inside the stall time: the node never looks silent.
      await sleep(STALL_MS / 4)
      n.send({ type: 'job_rejected', job_id: job.job_id, reason: ATTEMPT_ENDED.full })
    }
    const reputation = async () =>
      Number(
        (
          await server.core.database.db
            .selectFrom('nodes')
            .select('reputation_score')
            .where('id', '=', liar.nodeId)
            .executeTakeFirstOrThrow()
        ).reputation_score,
      )
    const before = await reputation()
    try {
      const pb = await signUp(server, 'payer')
      const user = pb.authStore.record!.id
      const balance = await balanceOf(server, user)
      const id = await askStory(server, stories, pb)
      // Before: accepted and rejected ~every 1.25 s for as long as the node liked.
      const ended = await requestEnded(server, id, STALL_MS * 4)
      expect(ended.status).toBe('failed')
      expect(String(ended.error_message)).toContain(NO_NODE_MESSAGE)
      expect(liar.jobs.filter((j) => j.request_id === id).length).toBe(1)
      // Held against the node as a failure of an accepted job.
      await sleep(200)
      expect(await reputation()).toBeLessThan(before)
      const after = await balanceOf(server, user)
      expect(after.balance).toBe(balance.balance)
      expect(after.held).toBe(0)
      await expectAuditPasses(server)
    } finally {
      liar.kill()
    }
  })
})
