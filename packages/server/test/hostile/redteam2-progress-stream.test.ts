/**
 * Red team: a node changing one model's status without a pause (download_progress new in every
 * frame, 3,000 frames a second). Reports waiting to be written are replaced by the latest, but a
 * report that changed something was written as soon as the one before it was: one write (and its
 * record event, and a reload of the node's desired state) per database round trip, for as long as
 * the node kept it up (1,898 writes in 3 s on SQLite). The agent sends progress at most 4 times a
 * second; a model's status is now written at most every 250 ms, the latest value last.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { dialects, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode } from '../support/hostile-node.ts'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(dialects)('[%s] red team: a sustained stream of model_status changes', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    stories = await modelId(server)
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('download_progress changing every millisecond for 3 s: writes at most ~4 a second', async () => {
    const { node } = await hostileNode(server, stories)
    const own = await server.core.database.db
      .selectFrom('node_models')
      .select('id')
      .where('node', '=', node.nodeId)
      .executeTakeFirstOrThrow()
    let writes = 0
    const stop = server.core.events.on(({ collection, row }) => {
      if (collection.name === 'node_models' && row.id === own.id) writes++
    })
    const end = Date.now() + 3000
    let i = 0
    while (Date.now() < end) {
      for (let k = 0; k < 5; k++)
        node.send({
          type: 'model_status',
          node_model_id: own.id,
          is_downloaded: false,
          download_progress: (i++ % 1000) / 10,
          is_serving: false,
          tokens_per_second: 1,
          error_message: '',
        })
      await sleep(1)
    }
    await sleep(500)
    stop()
    // 3.5 s at 4 a second, and the latest report is what is stored.
    expect(writes).toBeLessThan(20)
    const stored = await server.core.database.db
      .selectFrom('node_models')
      .select('download_progress')
      .where('id', '=', own.id)
      .executeTakeFirstOrThrow()
    expect(Number(stored.download_progress)).toBe(((i - 1) % 1000) / 10)
    node.kill()
  })
})
