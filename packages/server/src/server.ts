/**
 * @module Assembles and runs one coordinator process: core, realtime hub, HTTP routes, the SSE
 * stream and the web app, on one port. Tests and `main.ts` both start it through here.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { getRequestListener } from '@hono/node-server'
import type { Hono } from 'hono'
import type { Config } from './config.ts'
import { createCore, type CoreApp } from './core/app.ts'
import { findCollection } from './core/collections/registry.ts'
import { RealtimeHub } from './core/realtime/realtime-hub.ts'
import { RealtimeService, defaultRealtimeLimits } from './core/realtime/realtime-service.ts'
import { MemoryDirectory, RedisDirectory } from './core/realtime/client-directory.ts'
import type { RecordBusMessage } from './core/records/record-events.ts'
import { handleRealtimeStream } from './apis/realtime.ts'
import { createRouter } from './apis/router.ts'
import { createOriginResolver } from './apis/client-origin.ts'
import { setCommonHeaders } from './apis/security-headers.ts'
import { createRecordReadShortcut, type RecordReadShortcut } from './apis/record-read-shortcut.ts'
import { bindWebApp } from './apis/web-app.ts'
import { cutStalledWrites } from './apis/stalled-writes.ts'
import { bindModelDownload } from './apis/model-download.ts'
import { BuiltinModels } from './core/models/builtin-models.ts'
import { bindAgentPackage } from './apis/agent-package.ts'
import { bindNetworkRoutes } from './apis/network-routes.ts'
import { attachNodeGateway } from './apis/node-gateway.ts'
import { createMetrics } from './apis/metrics.ts'
import { bindApiKeyRoutes } from './apis/api-key-routes.ts'
import { bindOpenAiRoutes, type OpenAiRouteOptions } from './apis/openai-routes.ts'
import { OpenAiApi } from './core/openai/completions.ts'
import {
  createInferenceNetwork,
  type InferenceNetwork,
  type NetworkOptions,
} from './core/network/inference-network.ts'
import { localNodeHome } from './local-node/start-local-node.ts'
import { join } from 'node:path'
import { background } from './tools/background.ts'
import { log } from './tools/log.ts'

export interface RunningServer {
  core: CoreApp
  hub: RealtimeHub
  realtime: RealtimeService
  network: InferenceNetwork
  app: Hono
  /** Plain record reads answered outside Hono (tests turn it off to compare the two paths). */
  recordReads: RecordReadShortcut
  http: Server
  url: string
  port: number
  /**
   * Graceful drain (SIGTERM): stops accepting connections (a load balancer sends new ones to the
   * other processes), lets answers in flight finish until `deadlineMs`, hands the queue to the
   * other processes (or fails it retryable when alone), gives the lease up. Then call close().
   */
  drain(deadlineMs: number): Promise<void>
  close(): Promise<void>
}

export interface ServerExtras {
  /** Route groups added by later modules (chat, nodes). */
  routes?: Array<(app: Hono, core: CoreApp) => void>
  /** Timings of the inference network (tests shorten them). */
  network?: NetworkOptions
  /** The `/v1` API's options (tests shorten its body deadline). */
  openai?: OpenAiRouteOptions
  /** How long a request may take to arrive whole, headers and body (tests shorten it). */
  requestTimeoutMs?: number
  /** How long a client may take none of the bytes waiting for it (tests shorten it). */
  writeStallMs?: number
}

/**
 * Every body the API takes is at most 1 MiB: 30 s to send one is 35 KB/s. A request still
 * arriving after that is answered 408 by Node and its connection closed, where Node's default
 * held it five minutes (a few thousand such trickles hold as many sockets). A stream the server
 * sends (realtime, an answer) is not concerned: its request arrived whole at once.
 */
const REQUEST_TIMEOUT_MS = 30_000
/** How long closing waits for the requests being answered before it cuts them off. */
const CLOSE_WAIT_MS = 3000

const defaultWebDist = fileURLToPath(new URL('../../web/dist', import.meta.url))

export async function startServer(
  config: Config,
  extras: ServerExtras = {},
): Promise<RunningServer> {
  const core = await createCore(config)
  const hub = new RealtimeHub(core.database)
  const directory = core.redis
    ? new RedisDirectory(core.redis, core.processId)
    : new MemoryDirectory(core.processId)
  const limits = { ...defaultRealtimeLimits, ...config.realtimeLimits }
  const realtime = new RealtimeService(hub, core.auth, core.bus, directory, core.processId, limits)

  // Record events travel over the bus so that, scaled out, every process's subscribers get them.
  core.events.on((change) => {
    const message: RecordBusMessage = {
      action: change.action,
      collection: change.collection.name,
      row: change.row,
    }
    core.bus.publish('records', message)
  })
  core.bus.subscribe('records', (message) => {
    const m = message as RecordBusMessage
    const collection = findCollection(m.collection)
    if (!collection) return
    if (collection.type === 'auth' && m.action !== 'create') {
      core.auth.forget(m.row.id as string)
      hub.revoke(m.row.id as string, m.action === 'delete' ? null : m.row.tokenKey)
    }
    hub.publish({ action: m.action, collection, row: m.row }).catch((err) => {
      log.error({ err }, 'realtime delivery failed')
    })
  })

  // The coordinator's own tokenizers read model files from the mirror and the built-in node.
  const modelDirs = [config.modelMirror, join(localNodeHome(config.dataDir), 'models')]
  const network = await createInferenceNetwork(core, {
    modelDirs: modelDirs.filter((d): d is string => Boolean(d)),
    ...extras.network,
  })
  const openai = new OpenAiApi(core, network.chat, network.scheduler)
  const metrics = config.metricsToken
    ? createMetrics(config.metricsToken, { core, hub, network })
    : undefined
  const resolveOrigin = createOriginResolver(config)
  const app = createRouter({
    core,
    realtime,
    metrics,
    resolveOrigin,
    extra: [
      (a: Hono) => bindNetworkRoutes(a, core, network),
      (a: Hono) =>
        bindModelDownload(a, core, {
          mirror: config.modelMirror,
          builtin: config.builtinModelsDir ? new BuiltinModels(config.builtinModelsDir) : undefined,
        }),
      (a: Hono) => bindAgentPackage(a, config.agentPackage),
      (a: Hono) => bindApiKeyRoutes(a, core),
      (a: Hono) => bindOpenAiRoutes(a, core, openai, extras.openai),
      ...(extras.routes ?? []).map((bind) => (a: Hono) => bind(a, core)),
      (a: Hono) => {
        bindWebApp(a, config.webDist ?? defaultWebDist)
      },
    ],
  })
  const listener = getRequestListener(app.fetch)
  const throughHono = (req: IncomingMessage, res: ServerResponse) => {
    setCommonHeaders(res)
    background(listener(req, res), 'HTTP request')
  }
  const recordReads = createRecordReadShortcut(core, throughHono, metrics)
  let draining = false
  const requestTimeout = extras.requestTimeoutMs ?? REQUEST_TIMEOUT_MS
  const httpLimits = {
    requestTimeout,
    headersTimeout: Math.min(requestTimeout, 20_000),
    // How often Node looks for requests past their deadline (its default is 30 s).
    connectionsCheckingInterval: Math.min(2_000, Math.max(100, requestTimeout / 4)),
  }
  // Requests being answered: closing waits for them (a bounded moment) before the database goes.
  let answering = 0
  let answered: (() => void) | null = null
  const http = createHttpServer(httpLimits, (req, res) => {
    // Draining: clients (and balancers) reconnect elsewhere for their next request.
    if (draining) res.setHeader('Connection', 'close')
    // It sends the common headers itself, or gives the request to Hono (throughHono sets them).
    // A read it answered at once (most of them) leaves nothing for closing to wait for.
    const taken = recordReads.take(req, res)
    if (taken && res.writableEnded) return
    answering++
    res.once('close', () => {
      if (--answering === 0) answered?.()
    })
    if (taken) return
    if (req.method === 'GET' && req.url?.split('?')[0] === '/api/realtime') {
      setCommonHeaders(res)
      // Opening a stream reads Redis when scaled out: unreachable, the client gets a 503 it can
      // retry, and the process goes on.
      handleRealtimeStream(realtime, req, res, resolveOrigin(req).address).catch((err) => {
        log.error({ err }, 'realtime stream failed')
        if (res.headersSent) return res.destroy()
        res.writeHead(503, { 'Content-Type': 'application/json' })
        res.end(
          JSON.stringify({ data: {}, message: 'Realtime is unavailable, try again.', status: 503 }),
        )
      })
      return
    }
    throughHono(req, res)
  })
  http.keepAliveTimeout = 65_000
  const stopCuttingStalls = cutStalledWrites(http, extras.writeStallMs)
  const closeGateway = attachNodeGateway(http, core.database, network.registry)
  await new Promise<void>((resolve) => http.listen(config.port, config.host, resolve))
  const port = (http.address() as AddressInfo).port
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host
  return {
    core,
    hub,
    realtime,
    network,
    app,
    recordReads,
    http,
    port,
    url: `http://${host}:${port}`,
    async drain(deadlineMs: number) {
      draining = true
      // No new connections; idle keep-alive ones are closed, busy ones after their answer.
      http.close()
      http.closeIdleConnections()
      await network.drain(deadlineMs)
    },
    async close() {
      closeGateway()
      stopCuttingStalls()
      metrics?.close()
      network.close()
      realtime.stop()
      openai.close()
      // Requests still being answered finish first (up to CLOSE_WAIT_MS): closing the database
      // under them answered a send in flight with a 500 ("driver has already been destroyed").
      const closed = new Promise<void>((resolve) => http.close(() => resolve()))
      http.closeIdleConnections()
      if (answering > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, CLOSE_WAIT_MS)
          answered = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      }
      http.closeAllConnections()
      await closed
      await core.close()
    },
  }
}
