/**
 * Red team: a node flipping its status without a pause (heartbeats alternating busy and free,
 * hellos alternating their agent version), for as long as it likes. Reports waiting to be written
 * were replaced by the latest, but one that changed something was written as soon as the one
 * before it: a write of the node's row and its record event per database round trip (4,332 in 3 s
 * on SQLite, 1,208 on PostgreSQL). Each kind of report is now written at most every 250 ms.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { dialects, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode } from '../support/hostile-node.ts'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(dialects)('[%s] red team: sustained status flips', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    stories = await modelId(server)
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('heartbeats and hellos flipping every millisecond for 3 s: a bounded number of writes', async () => {
    const { node } = await hostileNode(server, stories)
    node.silence()
    let writes = 0
    const stop = server.core.events.on(({ collection, row }) => {
      if (collection.name === 'nodes' && row.id === node.nodeId) writes++
    })
    const end = Date.now() + 3000
    let i = 0
    while (Date.now() < end) {
      for (let k = 0; k < 5; k++, i++) {
        node.send({ type: 'heartbeat', busy_jobs: i % 2, max_jobs: 1 })
        node.send({
          type: 'hello',
          protocol_version: 2,
          agent_version: `v${i % 2}`,
          hardware: { cpu_model: 'x', cpu_cores: 1, memory_bytes: 1, gpu: null },
          engines: [],
          max_jobs: 1,
        })
      }
      await sleep(1)
    }
    await sleep(500)
    stop()
    expect(writes).toBeLessThan(40)
    node.kill()
  })
})
