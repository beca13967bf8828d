/**
 * Red team: a node floods `model_status` frames, each naming a different node model (a random id,
 * not its own). Reports of one kind waiting to be written are replaced by the latest, but each
 * node model is a kind of its own: every frame queued a read of `node_models` (one statement per
 * ~200-byte frame, as many as the node cares to send) and sat in the session's queue until its
 * turn, a queue with no bound.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { dialects, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode } from '../support/hostile-node.ts'
import { waitUntil } from '../support/network.ts'

describe.each(dialects)('[%s] red team: model_status for node models not its own', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    stories = await modelId(server)
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('20,000 frames naming 20,000 other ids cost a bounded number of statements', async () => {
    const { node } = await hostileNode(server, stories)
    try {
      const before = server.core.database.statements.count
      const FRAMES = 20_000
      for (let i = 0; i < FRAMES; i++)
        node.send({
          type: 'model_status',
          node_model_id: randomBytes(7).toString('hex').slice(0, 15),
          is_downloaded: true,
          download_progress: 100,
          is_serving: true,
          tokens_per_second: 1,
          error_message: '',
        })
      // Its own node model still answers to it (the honest report is not lost).
      const own = await server.core.database.db
        .selectFrom('node_models')
        .select('id')
        .where('node', '=', node.nodeId)
        .executeTakeFirstOrThrow()
      node.send({
        type: 'model_status',
        node_model_id: own.id,
        is_downloaded: true,
        download_progress: 100,
        is_serving: true,
        tokens_per_second: 7,
        error_message: 'after the flood',
      })
      await waitUntil(
        async () =>
          (
            await server.core.database.db
              .selectFrom('node_models')
              .select('error_message')
              .where('id', '=', own.id)
              .executeTakeFirstOrThrow()
          ).error_message === 'after the flood',
        60_000,
        'the honest report written',
      )
      const statements = server.core.database.statements.count - before
      expect(statements).toBeLessThan(1000)
    } finally {
      node.kill()
    }
  })
})
