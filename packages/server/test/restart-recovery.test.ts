import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { TAKEN_OVER_MESSAGE } from '../src/core/scheduler/takeover.ts'
import { dialects, signUp, startTestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { FakeNode, linkNode, postJson, serveModel, waitUntil } from './support/network.ts'
import { balanceOf } from './support/ledger.ts'

describe.each(dialects)('[%s] coordinator restart', (dialect) => {
  it('fails the running request retryable (hold released), runs the queued one again, marks nodes offline until they return', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshwork-restart-'))
    // PostgreSQL: both servers on one schema; SQLite: on one file.
    const databaseSchema =
      dialect === 'postgres' ? `t_restart_${process.pid}_${Date.now().toString(36)}` : undefined
    const first = await startTestServer(dialect, { dataDir, databaseSchema })
    const owner = await signUp(first, 'host')
    const { nodeId, credential } = await linkNode(first, owner)
    const node = new FakeNode(first, nodeId, credential)
    node.script = 'hang'
    await node.connect()
    const stories = await modelId(first)
    await serveModel(first, owner, nodeId, stories)
    const pb = await signUp(first, 'user')
    const userId = pb.authStore.record!.id
    const send = async (prompt: string) => {
      const conv = await pb.collection('conversations').create({ title: 'New Chat', user: userId })
      const sent = await postJson(
        first,
        '/api/chat/send',
        { conversation_id: conv.id, model_id: stories, prompt },
        pb.authStore.token,
      )
      expect(sent.status).toBe(200)
      return sent.body.request_id as string
    }
    const running = await send('Hello')
    await waitUntil(() => node.jobs.length === 1, 5000, 'job')
    // The node has one slot: the second request waits in the queue.
    const queued = await send('Tell me a story')
    expect((await balanceOf(first, userId)).held).toBeGreaterThan(0)
    await first.close()

    // A long grace: the test says when the previous run's requests are looked at (the node is back).
    const second = await startTestServer(
      dialect,
      { dataDir, databaseSchema },
      { network: { restartGraceMs: 60_000 } },
    )
    try {
      const db = second.core.database.db
      const statusOfNode = async () =>
        (
          await db
            .selectFrom('nodes')
            .select('status')
            .where('id', '=', nodeId)
            .executeTakeFirstOrThrow()
        ).status
      expect(await statusOfNode()).toBe('offline')
      const back = new FakeNode(second, nodeId, credential)
      await back.connect()
      await waitUntil(async () => (await statusOfNode()) === 'online', 10_000, 'node back online')
      expect(await second.network.recoverPrevious()).toBe(2)
      const row = (id: string) =>
        db.selectFrom('requests').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      expect(await row(running)).toMatchObject({
        status: 'failed',
        can_retry: 1,
        error_message: TAKEN_OVER_MESSAGE,
        reserved: 0,
      })
      await waitUntil(
        async () => (await row(queued)).status === 'completed',
        10_000,
        'queued request answered',
      )
      expect(await row(queued)).toMatchObject({
        response: 'Once upon a time',
        node: nodeId,
        reserved: 0,
      })
      const balance = await balanceOf(second, userId)
      expect(balance.held).toBe(0)
      expect(balance.balance).toBeLessThan(1000)
      back.kill()
    } finally {
      await second.stop()
    }
  })

  it('looks at what the previous run left by itself after the grace', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshwork-restart-'))
    const databaseSchema =
      dialect === 'postgres' ? `t_restart2_${process.pid}_${Date.now().toString(36)}` : undefined
    const first = await startTestServer(dialect, { dataDir, databaseSchema })
    const owner = await signUp(first, 'host')
    const { nodeId, credential } = await linkNode(first, owner)
    const node = new FakeNode(first, nodeId, credential)
    node.script = 'hang'
    await node.connect()
    const stories = await modelId(first)
    await serveModel(first, owner, nodeId, stories)
    const pb = await signUp(first, 'user')
    const userId = pb.authStore.record!.id
    const conv = await pb.collection('conversations').create({ title: 'New Chat', user: userId })
    const sent = await postJson(
      first,
      '/api/chat/send',
      { conversation_id: conv.id, model_id: stories, prompt: 'Hi' },
      pb.authStore.token,
    )
    await waitUntil(() => node.jobs.length === 1, 5000, 'job')
    await first.close()
    const second = await startTestServer(
      dialect,
      { dataDir, databaseSchema },
      { network: { restartGraceMs: 200 } },
    )
    try {
      const db = second.core.database.db
      await waitUntil(
        async () =>
          (
            await db
              .selectFrom('requests')
              .select('status')
              .where('id', '=', sent.body.request_id as string)
              .executeTakeFirstOrThrow()
          ).status === 'failed',
        10_000,
        'request failed after the grace',
      )
      expect(await balanceOf(second, userId)).toMatchObject({ balance: 1000, held: 0 })
    } finally {
      await second.stop()
    }
  })
})
