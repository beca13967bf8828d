/**
 * @module The inference network of one coordinator process: device linking, the node registry,
 * the scheduler and chat, wired to the core. `server.ts` creates it and mounts its routes and
 * the node WebSocket.
 */
import {
  releasePendingEarnings,
  reversePendingEarnings,
  REVERSAL_REASON,
} from '../ledger/pending-earnings.ts'
import type { CoreApp } from '../app.ts'
import { ChatService, MAX_OUTPUT_TOKENS } from '../chat/chat-service.ts'
import { listenForCancels } from '../chat/stop-request.ts'
import { HOLD_SWEEP_INTERVAL_MS, sweepStrandedHolds } from '../ledger/hold-sweep.ts'
import { failRequest } from '../ledger/settlement.ts'
import { LINK_FLOW_TTL_MS, LinkFlows } from '../nodes/link-flows.ts'
import { revokeCredentials } from '../nodes/node-credentials.ts'
import { Metering } from '../metering/metering.ts'
import {
  defaultNodeHealthOptions,
  NodeHealth,
  type NodeHealthOptions,
} from '../nodes/node-health.ts'
import { NodeRegistry } from '../nodes/node-registry.ts'
import type { RecordBusMessage } from '../records/record-events.ts'
import { Scheduler } from '../scheduler/scheduler.ts'
import { Canaries, defaultCanaryOptions, type CanaryOptions } from '../verification/canaries.ts'
import { ReferenceScores } from '../verification/reference-scores.ts'
import { defaultSchedulerOptions, type SchedulerOptions } from '../scheduler/work.ts'
import type { Limiter } from '../../tools/rate-limiter.ts'
import { background } from '../../tools/background.ts'

export interface NetworkOptions {
  scheduler?: Partial<SchedulerOptions>
  /** A node silent for this long (15 s by default) is disconnected; heartbeats come every 5 s. */
  heartbeatTimeoutMs?: number
  linkFlowTtlMs?: number
  /** How long one wait-flow long poll holds before answering pending. */
  waitFlowTimeoutMs?: number
  maxOutputTokens?: number
  /** Link flows one address may start per window (anonymous, and each writes a row); by default
   * the config's `linkFlowLimit` per 10 minutes. */
  startFlowLimit?: { limit: number; windowMs: number }
  /** Failures in a row that bench a node, and the cool-down. */
  health?: Partial<NodeHealthOptions>
  /** Folders that may hold catalogue model files, for the coordinator's own tokenizers. */
  modelDirs?: string[]
  /** Canary timing (tests set `tickMs: 0` and run canaries by hand). */
  canaries?: Partial<CanaryOptions>
}

export interface InferenceNetwork {
  flows: LinkFlows
  registry: NodeRegistry
  health: NodeHealth
  metering: Metering
  scheduler: Scheduler
  canaries: Canaries
  chat: ChatService
  waitFlowTimeoutMs: number
  /** Link flows started, per client address (shared by every process when scaled out). */
  startFlowLimit: Limiter
  close(): void
}

export const RESTART_MESSAGE = 'The coordinator restarted before this request finished.'

export async function createInferenceNetwork(
  core: CoreApp,
  options: NetworkOptions = {},
): Promise<InferenceNetwork> {
  // Scaled out (Redis configured), other processes may own the open requests and node sockets, so
  // a starting process must not fail them; restart recovery is for the single-process default.
  if (!core.config.redisUrl) await recoverAfterRestart(core)
  // Holds left without an open request (crash, bug): released at start-up and every hour.
  await sweepStrandedHolds(core.database.db)
  const sweeper = setInterval(() => {
    sweepStrandedHolds(core.database.db).catch((err) => console.error('hold sweep failed', err))
  }, HOLD_SWEEP_INTERVAL_MS)
  sweeper.unref()
  const flows = new LinkFlows(
    core.database,
    core.records,
    options.linkFlowTtlMs ?? LINK_FLOW_TTL_MS,
  )
  const registry = new NodeRegistry(core, options.heartbeatTimeoutMs ?? 15_000)
  const metering = new Metering(core.database.db, options.modelDirs ?? [])
  const health = new NodeHealth(core, metering, { ...defaultNodeHealthOptions, ...options.health })
  const scheduler = new Scheduler(core, registry, health, {
    ...defaultSchedulerOptions,
    ...options.scheduler,
  })
  const startFlow = options.startFlowLimit ?? {
    limit: core.config.linkFlowLimit ?? 0,
    windowMs: 10 * 60_000,
  }
  const maxOutputTokens = options.maxOutputTokens ?? MAX_OUTPUT_TOKENS
  const chat = new ChatService(core, scheduler, metering, maxOutputTokens)
  const scores = new ReferenceScores(registry)
  const canaries = new Canaries(
    {
      core,
      registry,
      scheduler,
      metering,
      scores,
      sampling: (temperature) => chat.sampling(temperature),
      maxOutputTokens,
      // Earnings held while on probation: paid on verification, returned to payers on failure.
      hooks: {
        onGraduated: async (trx, nodeId) => (await releasePendingEarnings(trx, nodeId)).users,
        onFailed: async (trx, nodeId) =>
          (await reversePendingEarnings(trx, nodeId, REVERSAL_REASON)).users,
      },
    },
    { ...defaultCanaryOptions, ...options.canaries },
  )
  const stopRevoking = core.events.on((change) => {
    if (change.collection.name === 'nodes' && change.action === 'delete') {
      background(revokeCredentials(core.database.db, String(change.row.id)), 'revoking a deleted node\'s credentials')
    }
  })
  // A request deleted on any process (with its conversation or account) may be running here.
  const stopForgetting = core.bus.subscribe('records', (message) => {
    const m = message as RecordBusMessage
    if (m.collection === 'requests' && m.action === 'delete')
      scheduler.onRequestDeleted(String(m.row.id))
  })
  const stopCancelling = listenForCancels(core, scheduler)
  return {
    flows,
    registry,
    health,
    metering,
    scheduler,
    canaries,
    chat,
    waitFlowTimeoutMs: options.waitFlowTimeoutMs ?? 25_000,
    startFlowLimit: core.limits.create('link-flow', {
      points: startFlow.limit === Infinity ? 0 : startFlow.limit,
      windowSeconds: Math.ceil(startFlow.windowMs / 1000),
    }),
    close() {
      clearInterval(sweeper)
      stopRevoking()
      stopForgetting()
      stopCancelling()
      canaries.close()
      scores.close()
      scheduler.close()
      registry.close()
      background(metering.dispose(), 'disposing of the tokenizers')
    },
  }
}

/**
 * Nothing survives a restart in memory: unfinished requests fail (retryable, hold released) and
 * every node counts as offline until its socket is back.
 */
async function recoverAfterRestart(core: CoreApp) {
  const db = core.database.db
  const open = await db
    .selectFrom('requests')
    .select('id')
    .where('status', 'in', ['pending', 'processing'])
    .execute()
  for (const r of open) await failRequest(db, String(r.id), RESTART_MESSAGE, true)
  await db
    .updateTable('nodes')
    .set({ status: 'offline' })
    .where('status', '!=', 'offline')
    .execute()
  await db
    .updateTable('node_jobs')
    .set({ status: 'failed' })
    .where('status', 'in', ['pending', 'acked'])
    .execute()
}
