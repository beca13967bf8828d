/**
 * @module /api/health (PocketBase's shape) and /api/system/health (real checks of the database and
 * the bus/queue backend, for the Network screen).
 */
import type { Hono } from 'hono'
import type { CoreApp } from '../core/app.ts'

/** One service as the Network screen shows it; Redis is 'not_configured' on the embedded bus. */
export type ServiceState = 'online' | 'offline' | 'not_configured'

/** A check that has not answered in this long counts as failed (health must answer quickly). */
const PING_TIMEOUT_MS = 2000

async function ping(check: () => Promise<boolean>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<boolean>(
    (resolve) => (timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS)),
  )
  try {
    return await Promise.race([check().catch(() => false), late])
  } finally {
    clearTimeout(timer)
  }
}

/** Whether the database and (when configured) Redis answer: what this process needs to serve. */
async function services(core: CoreApp) {
  const [database, bus] = await Promise.all([
    ping(() => core.database.ping()),
    // Scaled out, a process its messages do not reach serves stale realtime streams.
    ping(async () => core.bus.receiving() && (await core.bus.ping())),
  ])
  return { database, bus, redisConfigured: core.bus.kind === 'redis' }
}

export function bindHealth(app: Hono, core: CoreApp) {
  // PocketBase's shape. 503 when this process cannot serve at all (its database is unreachable),
  // so a load balancer stops sending it traffic. Redis unreachable is 200 with the outage named:
  // every process shares that Redis, so a 503 would let a balancer that checks health take every
  // process out at once, while each can still serve (records, sign-in, sends to its own nodes,
  // rate limits counted in memory); realtime answers its own 503 meanwhile.
  app.get('/api/health', async (c) => {
    const { database, bus } = await services(core)
    if (!database) {
      const also = bus ? '' : ' and Redis'
      return c.json(
        {
          message: `API is not healthy: the database${also} cannot be reached.`,
          code: 503,
          data: {},
        },
        503,
      )
    }
    if (bus) return c.json({ message: 'API is healthy.', code: 200, data: {} })
    return c.json({
      message: 'API is healthy, degraded: Redis cannot be reached.',
      code: 200,
      data: { degraded: ['redis'] },
    })
  })

  app.get('/api/system/health', async (c) => {
    const { database, bus, redisConfigured } = await services(core)
    const redis = redisConfigured && bus
    const ok = database && bus
    // Always 200: the Network screen shows which service is down from the body. `services` keeps
    // the spec's two booleans (true only for a service that exists and answered); `states` tells
    // a Redis that is down from one that was never configured (the embedded bus).
    return c.json({
      status: ok ? 'healthy' : 'degraded',
      services: { database, redis },
      states: {
        database: database ? 'online' : 'offline',
        redis: redisConfigured ? (redis ? 'online' : 'offline') : 'not_configured',
      } satisfies Record<string, ServiceState>,
      backends: { database: core.database.dialect, redis: core.bus.kind },
    })
  })
}
