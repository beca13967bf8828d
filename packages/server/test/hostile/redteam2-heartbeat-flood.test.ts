/**
 * Red team: scaled out, a node's heartbeats are announced to the other processes over Redis (its
 * slots, for their schedulers). A node that sends heartbeats as fast as it can made one Redis
 * publish per frame, delivered to and parsed by every other process (each one a scheduling pass
 * when the node shows a free slot): 20,000 frames of ~50 bytes, 20,000 messages to every process.
 */
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { startPeerServer, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode } from '../support/hostile-node.ts'
import { waitUntil } from '../support/network.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.runIf(redisUrl && databaseUrl)('red team: a heartbeat flood, scaled out', () => {
  let a: TestServer
  let b: TestServer
  let stories: string
  let listener: Redis
  beforeAll(async () => {
    listener = new Redis(redisUrl!)
    a = await startTestServer('postgres', { redisUrl })
    b = await startPeerServer(a, { redisUrl })
    stories = await modelId(a)
  })
  afterAll(async () => {
    listener?.disconnect()
    await a?.close().catch(() => {})
    await b?.stop()
  })

  it('20,000 heartbeats make a bounded number of announcements', async () => {
    const { node } = await hostileNode(a, stories)
    let heard = 0
    await listener.psubscribe('*nodes')
    listener.on('pmessage', (_p, _c, message) => {
      if (message.includes(node.nodeId)) heard++
    })
    // B knows the node (its announcements reach B).
    await waitUntil(() => b.network.registry.get(node.nodeId), 5000, 'B knows the node')
    node.silence()
    heard = 0
    const started = Date.now()
    for (let i = 0; i < 20_000; i++)
      node.send({ type: 'heartbeat', busy_jobs: 2 + (i % 2), max_jobs: 3 + (i % 2) })
    node.send({ type: 'heartbeat', busy_jobs: 0, max_jobs: 1 })
    await sleep(3000)
    const seconds = (Date.now() - started) / 1000
    expect(heard).toBeLessThan(20 * seconds + 10)
    // The latest state is what B holds: one free slot of one.
    expect(b.network.registry.get(node.nodeId)?.freeSlots).toBe(1)
    node.kill()
  })
})
