import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { RESTART_MESSAGE } from '../src/core/network/inference-network.ts'
import { dialects, signUp, startTestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { FakeNode, linkNode, postJson, serveModel, waitUntil } from './support/network.ts'
import { balanceOf } from './support/ledger.ts'

describe.each(dialects)('[%s] coordinator restart', (dialect) => {
  it('fails unfinished requests as retryable, releases their holds and marks nodes offline', async () => {
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
    const conv = await pb.collection('conversations').create({ title: 'New Chat', user: userId })
    const sent = await postJson(
      first,
      '/api/chat/send',
      { conversation_id: conv.id, model_id: stories, prompt: 'Hello' },
      pb.authStore.token,
    )
    await waitUntil(() => node.jobs.length === 1, 5000, 'job')
    await first.close()

    const second = await startTestServer(dialect, { dataDir, databaseSchema })
    try {
      const db = second.core.database.db
      const request = await db
        .selectFrom('requests')
        .selectAll()
        .where('id', '=', sent.body.request_id as string)
        .executeTakeFirstOrThrow()
      expect(request).toMatchObject({
        status: 'failed',
        can_retry: 1,
        error_message: RESTART_MESSAGE,
        reserved: 0,
      })
      expect(await balanceOf(second, userId)).toMatchObject({ balance: 1000, held: 0 })
      expect(
        (
          await db
            .selectFrom('nodes')
            .select('status')
            .where('id', '=', nodeId)
            .executeTakeFirstOrThrow()
        ).status,
      ).toBe('offline')
    } finally {
      await second.stop()
    }
  })
})
