/**
 * @module Prometheus metrics at GET /api/metrics, served only when MESHWORK_METRICS_TOKEN is set
 * and only to `Authorization: Bearer <token>` (otherwise the route does not exist, and nothing is
 * measured). HTTP requests are counted and timed per registered route pattern, so labels stay few
 * whatever the URLs; the network's state is read at scrape time.
 */
import { timingSafeEqual } from 'node:crypto'
import type { Hono, MiddlewareHandler } from 'hono'
import { routePath } from 'hono/route'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { CoreApp } from '../core/app.ts'
import type { InferenceNetwork } from '../core/network/inference-network.ts'
import type { RealtimeHub } from '../core/realtime/realtime-hub.ts'
import { unauthorized } from '../tools/api-error.ts'

export interface MetricsSources {
  core: CoreApp
  hub: RealtimeHub
  network: InferenceNetwork
}

export interface Metrics {
  /** Counts and times every request; mount before the routes. */
  middleware: MiddlewareHandler
  /** Counts one answered request (what the middleware does, for answers given outside Hono). */
  observe(method: string, route: string, status: number, start: number): void
  bind(app: Hono): void
  close(): void
}

export function createMetrics(token: string, { core, hub, network }: MetricsSources): Metrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const requests = new Counter({
    name: 'meshwork_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  })
  const duration = new Histogram({
    name: 'meshwork_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route pattern.',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  })
  const chatRequests = new Counter({
    name: 'meshwork_chat_requests_total',
    help: 'Chat requests that reached an end on this process, by status.',
    labelNames: ['status'],
    registers: [registry],
  })
  new Gauge({
    name: 'meshwork_nodes_connected',
    help: 'Nodes with an open socket: on this process (local) or known on other processes (remote).',
    labelNames: ['where'],
    registers: [registry],
    collect() {
      const counts = network.registry.counts()
      this.set({ where: 'local' }, counts.local)
      this.set({ where: 'remote' }, counts.remote)
    },
  })
  new Gauge({
    name: 'meshwork_scheduler_requests',
    help: "Chat requests in this process's scheduler: waiting for a node (queued) or out on one (running).",
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.set({ state: 'queued' }, network.scheduler.queued)
      this.set({ state: 'running' }, network.scheduler.running)
    },
  })
  new Gauge({
    name: 'meshwork_realtime_clients',
    help: 'Realtime (SSE) clients connected to this process.',
    registers: [registry],
    collect() {
      this.set(hub.size)
    },
  })
  new Counter({
    name: 'meshwork_db_statements_total',
    help: "Database statements this process ran (transactions' BEGIN and COMMIT included).",
    registers: [registry],
    collect() {
      this.reset()
      this.inc(core.database.statements.count)
    },
  })
  const traffic = core.bus.traffic
  if (traffic) {
    new Counter({
      name: 'meshwork_bus_messages_total',
      help: 'Messages this process published to Redis (out) and received from it (in).',
      labelNames: ['direction'],
      registers: [registry],
      collect() {
        this.reset()
        this.inc({ direction: 'out' }, traffic.published)
        this.inc({ direction: 'in' }, traffic.received)
      },
    })
    new Counter({
      name: 'meshwork_bus_bytes_total',
      help: 'Bytes (JSON text) of the messages this process published to Redis (out) and received (in).',
      labelNames: ['direction'],
      registers: [registry],
      collect() {
        this.reset()
        this.inc({ direction: 'out' }, traffic.publishedBytes)
        this.inc({ direction: 'in' }, traffic.receivedBytes)
      },
    })
  }
  // The hub counts; these counters take its totals at scrape time.
  new Counter({
    name: 'meshwork_realtime_dropped_events_total',
    help: 'Record events this process did not deliver because their subscriber was over its cost budget or backlog.',
    registers: [registry],
    collect() {
      this.reset()
      this.inc(hub.dropped)
    },
  })
  new Counter({
    name: 'meshwork_realtime_checks_total',
    help: 'Rule and filter checks made for realtime events, in memory or as a database query.',
    labelNames: ['where'],
    registers: [registry],
    collect() {
      this.reset()
      this.inc({ where: 'memory' }, hub.checks.memory)
      this.inc({ where: 'database' }, hub.checks.database)
    },
  })

  const stopCounting = core.events.on((change) => {
    if (change.collection.name !== 'requests' || change.action !== 'update') return
    const status = change.row.status
    if ((status === 'completed' || status === 'failed') && !Number(change.row.is_partial))
      chatRequests.inc({ status })
  })

  const expected = Buffer.from(`Bearer ${token}`)
  const authorized = (header: string | undefined) => {
    const given = Buffer.from(header ?? '')
    return given.length === expected.length && timingSafeEqual(given, expected)
  }

  const observe = (method: string, route: string, status: number, start: number) => {
    requests.inc({ method, route, status: String(status) })
    duration.observe({ method, route }, (performance.now() - start) / 1000)
  }

  return {
    async middleware(c, next) {
      const start = performance.now()
      await next()
      observe(c.req.method, routePath(c, -1) || 'unmatched', c.res.status, start)
    },
    observe,
    bind(app) {
      app.get('/api/metrics', async (c) => {
        if (!authorized(c.req.header('authorization'))) throw unauthorized()
        return c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType })
      })
    },
    close() {
      stopCounting()
      registry.clear()
    },
  }
}
