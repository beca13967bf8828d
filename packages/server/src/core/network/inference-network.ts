/**
 * @module The inference network of one coordinator process: device linking, the node registry,
 * the scheduler and chat, wired to the core. `server.ts` creates it and mounts its routes and
 * the node WebSocket.
 */
import type { CoreApp } from '../app.ts'
import { ChatService, MAX_OUTPUT_TOKENS } from '../chat/chat-service.ts'
import { failRequest } from '../ledger/settlement.ts'
import { LINK_FLOW_TTL_MS, LinkFlows } from '../nodes/link-flows.ts'
import { revokeCredentials } from '../nodes/node-credentials.ts'
import { NodeRegistry } from '../nodes/node-registry.ts'
import { Scheduler } from '../scheduler/scheduler.ts'
import { defaultSchedulerOptions, type SchedulerOptions } from '../scheduler/work.ts'
import { RateLimit, type RateLimitOptions } from '../../tools/rate-limit.ts'

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
  startFlowLimit?: RateLimitOptions
}

export interface InferenceNetwork {
  flows: LinkFlows
  registry: NodeRegistry
  scheduler: Scheduler
  chat: ChatService
  waitFlowTimeoutMs: number
  startFlowLimit: RateLimit
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
  const flows = new LinkFlows(
    core.database,
    core.records,
    options.linkFlowTtlMs ?? LINK_FLOW_TTL_MS,
  )
  const registry = new NodeRegistry(core, options.heartbeatTimeoutMs ?? 15_000)
  const scheduler = new Scheduler(core, registry, {
    ...defaultSchedulerOptions,
    ...options.scheduler,
  })
  const chat = new ChatService(core, scheduler, options.maxOutputTokens ?? MAX_OUTPUT_TOKENS)
  const stopRevoking = core.events.on((change) => {
    if (change.collection.name === 'nodes' && change.action === 'delete') {
      void revokeCredentials(core.database.db, String(change.row.id))
    }
  })
  return {
    flows,
    registry,
    scheduler,
    chat,
    waitFlowTimeoutMs: options.waitFlowTimeoutMs ?? 25_000,
    startFlowLimit: new RateLimit(
      options.startFlowLimit ?? { limit: core.config.linkFlowLimit || Infinity, windowMs: 10 * 60_000 },
    ),
    close() {
      stopRevoking()
      scheduler.close()
      registry.close()
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
