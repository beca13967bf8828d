/**
 * An agent that dies with jobs running (a crash, a power cut, `kill -9`): its requests go to other
 * nodes, and the loss counts as one failure toward a bench, not one per job (each job still costs
 * its reputation). Counted per job, one crash of an honest node running three jobs benched it for
 * five minutes, and `npm run chaos` killing agents soon had no node left ("No node is
 * available"). A node dropping its socket on purpose still pays a failure each time and is
 * benched after three. SQLite and PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import { JOB_REJECT_REASONS, type JobOfferFrame } from '@meshwork/protocol'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { REPUTATION_LOSS } from '../../src/core/ledger/settlement.ts'
import { modelId } from '../fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { expectAuditPasses } from '../support/ledger.ts'
import {
  askStory,
  requestEnded,
  requestRowOf,
  servingNode,
  waitUntil,
  FakeNode,
} from '../support/network.ts'

/** An agent just restarted: connected again, its model not loaded yet, so it turns offers down. */
class RestartingNode extends FakeNode {
  loading = false
  protected override async run(job: JobOfferFrame) {
    if (!this.loading) return super.run(job)
    this.jobs.push(job)
    this.send({ type: 'job_rejected', job_id: job.job_id, reason: JOB_REJECT_REASONS.notServing })
  }
}

describe.each(dialects)('[%s] a node that dies with jobs running', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    stories = await modelId(server)
  })
  afterAll(async () => {
    await server?.stop()
  })
  // Each case has the network to itself.
  const nodes: FakeNode[] = []
  const linkedNode = async (maxJobs: number) => {
    const serving = await servingNode(server, stories, server, maxJobs)
    nodes.push(serving.node)
    return serving.node
  }
  afterEach(async () => {
    for (const n of nodes.splice(0)) await kill(n)
  })

  const nodeRow = (id: string) =>
    server.core.database.db
      .selectFrom('nodes')
      .select(['reputation_score', 'benched_until'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  const isBenched = async (id: string) =>
    String((await nodeRow(id)).benched_until) > new Date().toISOString().replace('T', ' ')
  const ask = (pb: PocketBase) => askStory(server, stories, pb)
  /** Kills the node's socket and waits until the coordinator has let it go. */
  const kill = async (node: FakeNode) => {
    node.kill()
    await waitUntil(() => !server.network.registry.get(node.nodeId), 5000, 'node gone')
  }
  const running = (node: FakeNode, count: number) =>
    waitUntil(
      () => node.frames.filter((f) => f.type === 'job_offer').length >= count,
      5000,
      `${count} jobs offered`,
    )

  it('three jobs lost in one crash count one failure toward a bench: the node is not benched and gets work again', async () => {
    const crashing = await linkedNode(3)
    crashing.script = 'hang'
    const pb = await signUp(server, 'chatter')
    const ids = [await ask(pb), await ask(pb), await ask(pb)]
    await running(crashing, 3)
    const before = Number((await nodeRow(crashing.nodeId)).reputation_score)

    const survivor = await linkedNode(3)
    await kill(crashing)
    for (const id of ids) {
      const done = await requestEnded(server, id)
      expect(done.status).toBe('completed')
      expect(done.node).toBe(survivor.nodeId)
    }
    // Each lost job's reputation, as for any failed job.
    await waitUntil(
      async () =>
        Math.abs(
          Number((await nodeRow(crashing.nodeId)).reputation_score) -
            (before - 3 * REPUTATION_LOSS),
        ) < 1e-6,
      5000,
      'the reputation of three jobs',
    )
    expect(await isBenched(crashing.nodeId)).toBe(false)

    // Back after its restart, it is offered work like any node.
    survivor.kill()
    crashing.script = 'stream'
    crashing.frames = []
    await crashing.connect()
    await waitUntil(() => server.network.registry.get(crashing.nodeId), 5000, 'back')
    const again = await requestEnded(server, await ask(pb))
    expect(again.status).toBe('completed')
    expect(again.node).toBe(crashing.nodeId)
    await expectAuditPasses(server)
  })

  it('a node back from a restart, still loading its model, is not held to account for the offers it turns down', async () => {
    const { node: first } = await servingNode(server, stories, server, 1)
    first.kill()
    await waitUntil(() => !server.network.registry.get(first.nodeId), 5000, 'node gone')
    const before = await nodeRow(first.nodeId)
    const restarted = new RestartingNode(server, first.nodeId, first.credential, 1)
    nodes.push(restarted)
    restarted.loading = true
    await restarted.connect()
    await waitUntil(() => server.network.registry.get(first.nodeId), 5000, 'back')
    const pb = await signUp(server, 'early')
    const id = await ask(pb)
    // An offer arrives while it loads, and is turned down ("not being served").
    await waitUntil(() => restarted.jobs.length >= 1, 5000, 'offer turned down')
    restarted.loading = false
    const done = await requestEnded(server, id)
    expect(done.status).toBe('completed')
    expect(done.node).toBe(first.nodeId)
    const after = await nodeRow(first.nodeId)
    expect(Number(after.reputation_score)).toBeGreaterThanOrEqual(Number(before.reputation_score))
    expect(await isBenched(first.nodeId)).toBe(false)
    await expectAuditPasses(server)
  })

  it('a node dropping its socket with a job each time is benched after three drops', async () => {
    const dropper = await linkedNode(3)
    dropper.script = 'hang'
    const pb = await signUp(server, 'victim')
    for (let drop = 1; drop <= 3; drop++) {
      expect(await isBenched(dropper.nodeId)).toBe(false)
      const id = await ask(pb)
      await running(dropper, drop)
      await kill(dropper)
      // Alone with the model, its request fails retryable, nothing charged.
      const ended = await requestEnded(server, id)
      expect(ended.status).toBe('failed')
      expect(Number((await requestRowOf(server, id)).cost)).toBe(0)
      await dropper.connect()
      await waitUntil(() => server.network.registry.get(dropper.nodeId), 5000, 'back')
    }
    expect(await isBenched(dropper.nodeId)).toBe(true)
    await expectAuditPasses(server)
  })
})
