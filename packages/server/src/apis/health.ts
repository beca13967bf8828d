/**
 * @module /api/health (PocketBase's shape) and /api/system/health (real checks of the database and
 * the bus/queue backend, for the Network screen).
 */
import type { Hono } from 'hono'
import type { CoreApp } from '../core/app.ts'

export function bindHealth(app: Hono, core: CoreApp) {
  app.get('/api/health', (c) => c.json({ message: 'API is healthy.', code: 200, data: {} }))

  app.get('/api/system/health', async (c) => {
    const [database, redis] = await Promise.all([core.database.ping(), core.bus.ping()])
    const ok = database && redis
    // Always 200: the Network screen shows which service is down from the body.
    return c.json({
      status: ok ? 'healthy' : 'degraded',
      services: { database, redis },
      backends: { database: core.database.dialect, redis: core.bus.kind },
    })
  })
}
