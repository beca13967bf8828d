/**
 * @module `npm start`: runs one coordinator with the configuration from the environment, and the
 * local node (house account) unless MESHWORK_LOCAL_NODE=0.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { configFromEnv } from './config.ts'
import { localNodeHome, startLocalNode, type LocalNode } from './local-node/start-local-node.ts'
import { startServer } from './server.ts'

// The shared test models next to the project are the default mirror on a fresh checkout.
const defaultMirror = fileURLToPath(new URL('../../../../shared/models', import.meta.url))

const config = configFromEnv()
if (!config.modelMirror && existsSync(defaultMirror)) config.modelMirror = defaultMirror
const server = await startServer(config)
const db = server.core.database.dialect === 'sqlite' ? `SQLite in ${config.dataDir}` : 'PostgreSQL'
console.log(
  `Meshwork coordinator listening on http://localhost:${server.port} (${db}, bus: ${server.core.bus.kind})`,
)

let localNode: LocalNode | null = null
if (config.localNode) {
  try {
    localNode = await startLocalNode(server.core, {
      server: server.url,
      home: localNodeHome(config.dataDir),
    })
    localNode.agent.events.on('model_status', (s) => {
      if (s.error_message) console.error(`Local node: ${s.error_message}`)
    })
    console.log(`Local node ${localNode.nodeId} started (MESHWORK_LOCAL_NODE=0 turns it off)`)
  } catch (err) {
    console.error('The local node could not start:', err)
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    const stopNode = localNode ? localNode.agent.stop().catch(() => {}) : Promise.resolve()
    stopNode.then(() => server.close()).finally(() => process.exit(0))
  })
}
