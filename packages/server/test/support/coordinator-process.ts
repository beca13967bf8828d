/**
 * @module One coordinator as a real process of its own (cluster.ts starts several behind nginx):
 * the configuration from the environment like `npm start`, shorter network timings so that tests
 * and the chaos run see a dead process's work taken over within a few seconds, and `main.ts`'s
 * signal handling (SIGTERM drains). Over IPC it says when it listens, and which nodes have their
 * sockets here.
 */
import { configFromEnv } from '../../src/config.ts'
import { startServer } from '../../src/server.ts'

const config = configFromEnv()
const server = await startServer(config, {
  network: {
    heartbeatTimeoutMs: Number(process.env.TEST_HEARTBEAT_TIMEOUT_MS ?? 3000),
    leaseTtlMs: Number(process.env.TEST_LEASE_TTL_MS ?? 2000),
    takeoverIntervalMs: 500,
    scheduler: { stallMs: 8000, offerTimeoutMs: 4000 },
  },
})
process.send?.({ type: 'ready', url: server.url, processId: server.core.processId })
process.on('message', (m: { type: string }) => {
  if (m.type === 'nodes')
    process.send?.({
      type: 'nodes',
      nodes: [...server.network.registry.locals()].map((s) => s.nodeId),
    })
})
let stopping = false
process.on('SIGTERM', () => {
  if (stopping) return
  stopping = true
  server
    .drain(config.drainMs ?? 30_000)
    .then(() => server.close())
    .then(
      () => process.exit(0),
      (err) => {
        console.error('drain failed', err)
        process.exit(1)
      },
    )
})
