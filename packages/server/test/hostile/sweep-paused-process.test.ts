/**
 * A coordinator process that was paused (SIGSTOP, a frozen virtual machine, a long garbage
 * collection) wakes with its periodic checks overdue and its sockets full of what the nodes and
 * the other processes sent meanwhile. The checks run first, so a check that judged by silence
 * took every node for dead: it cut the sockets of its own nodes, forgot the other processes'
 * nodes (every send then failed "No node is available") and reassigned every running job as
 * stalled. `npm run chaos` pausing coordinators showed it (docs/scaling-out.md). Here the pause is
 * the test process's own event loop held busy: the coordinator and the fake node in it stop
 * together, as a frozen machine's would from the outside. The relay's forgetting of other
 * processes' nodes is pinned in src/core/nodes/node-relay.test.ts.
 */
import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer } from '../harness.ts'
import { expectAuditPasses } from '../support/ledger.ts'
import { askStory, requestEnded, servingNode, waitUntil } from '../support/network.ts'

/** Holds this process's event loop for `ms`: nothing runs, nothing is read. */
function pause(ms: number) {
  const until = Date.now() + ms
  while (Date.now() < until) {
    // busy: a paused process
  }
}

const network = {
  heartbeatTimeoutMs: 1000,
  scheduler: { stallMs: 1000, offerTimeoutMs: 1000 },
}

describe.each(dialects)('[%s] a coordinator woken from a pause', (dialect) => {
  it('keeps its nodes and its running answer: nothing was silent but itself', async () => {
    const server = await startTestServer(dialect, {}, { network })
    try {
      const stories = await modelId(server)
      const { node } = await servingNode(server, stories)
      node.chunkDelayMs = 250 // an answer of about a second, a frame every 250 ms
      const requestId = await askStory(server, stories, await signUp(server, 'paused'))
      await waitUntil(() => node.jobs.length === 1, 10_000, 'job started')
      pause(2500) // longer than the heartbeat timeout and the stall limit
      const row = await requestEnded(server, requestId)
      expect(row).toMatchObject({ status: 'completed', response: 'Once upon a time' })
      expect(node.jobs).toHaveLength(1) // not reassigned as stalled
      expect(node.ws.readyState).toBe(WebSocket.OPEN)
      await expectAuditPasses(server)
      node.kill()
    } finally {
      await server.stop()
    }
  })
})
