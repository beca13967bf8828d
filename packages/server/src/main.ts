/**
 * @module `npm start`: runs one coordinator with the configuration from the environment, and the
 * local node (house account) unless MESHWORK_LOCAL_NODE=0.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { configFromEnv } from './config.ts'
import { localNodeHome, startLocalNode, type LocalNode } from './local-node/start-local-node.ts'
import { startServer } from './server.ts'
import { log } from './tools/log.ts'
import { logUnhandledRejections } from './tools/process-guards.ts'

logUnhandledRejections('coordinator')

// The shared test models next to the project are the default mirror on a fresh checkout.
const defaultMirror = fileURLToPath(new URL('../../../../shared/models', import.meta.url))

const config = configFromEnv()
if (!config.modelMirror && existsSync(defaultMirror)) config.modelMirror = defaultMirror
const server = await startServer(config)
const db = server.core.database.dialect === 'sqlite' ? `SQLite in ${config.dataDir}` : 'PostgreSQL'
log.info(
  `Meshwork coordinator listening on http://localhost:${server.port} (${db}, bus: ${server.core.bus.kind})`,
)

// The first send to each model must not wait for its tokenizer to load.
server.network.metering
  .warmUp()
  .then((n) => log.info(`Tokenizers loaded for ${n} models`))
  .catch((err: unknown) => log.warn({ err }, 'loading the tokenizers ahead failed'))

let localNode: LocalNode | null = null
if (config.localNode) {
  try {
    localNode = await startLocalNode(server.core, {
      server: server.url,
      home: localNodeHome(config.dataDir),
    })
    const agent = localNode.agent
    // One line per change of state or reason, naming the model (the agent retries by itself).
    const said = new Map<string, string>()
    agent.events.on('model_status', (s) => {
      const name = agent.modelName(s.node_model_id) ?? s.node_model_id
      const line = s.error_message
        ? `Local node, ${name}: ${s.error_message}`
        : s.is_serving
          ? `Local node, ${name}: serving (${s.tokens_per_second.toFixed(0)} tokens/s)`
          : null
      if (!line || said.get(name) === line) return
      said.set(name, line)
      if (s.error_message) log.error(line)
      else log.info(line)
    })
    log.info(`Local node ${localNode.nodeId} started (MESHWORK_LOCAL_NODE=0 turns it off)`)
  } catch (err) {
    log.error({ err }, 'The local node could not start')
  }
}

// SIGTERM drains (answers in flight finish, the queue goes to the other processes, up to
// MESHWORK_DRAIN_SECONDS); SIGINT, or a second signal, stops at once.
let stopping = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1)
    stopping = true
    const drain = signal === 'SIGTERM' ? server.drain(config.drainMs ?? 30_000) : Promise.resolve()
    void drain
      .catch((err) => log.error({ err }, 'drain failed'))
      .then(() => (localNode ? localNode.agent.stop().catch(() => {}) : undefined))
      .then(() => server.close())
      .catch((err) => log.error({ err }, 'shutdown failed'))
      .finally(() => process.exit(0))
  })
}
