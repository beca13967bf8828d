/**
 * @module `npm start`: runs one coordinator with the configuration from the environment.
 */
import { configFromEnv } from './config.ts'
import { startServer } from './server.ts'

const config = configFromEnv()
const server = await startServer(config)
const db = server.core.database.dialect === 'sqlite' ? `SQLite in ${config.dataDir}` : 'PostgreSQL'
console.log(`Meshwork coordinator listening on http://localhost:${server.port} (${db}, bus: ${server.core.bus.kind})`)

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    server.close().finally(() => process.exit(0))
  })
}
