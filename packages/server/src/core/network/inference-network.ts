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
import { withUnitOfWork, type UnitOfWork } from '../records/unit-of-work.ts'
import { ChatService, MAX_OUTPUT_TOKENS } from '../chat/chat-service.ts'
import { listenForCancels } from '../chat/stop-request.ts'
import {
  DELETION_HOLD_BOUND_MS,
  DELETION_HOLD_CHECK_MS,
  HOLD_SWEEP_INTERVAL_MS,
  sweepDeletionHolds,
  sweepStrandedHolds,
} from '../ledger/hold-sweep.ts'
import { LocalLeases, RedisLeases, LEASE_TTL_MS, type ProcessLeases } from '../scheduler/leases.ts'
import { Takeover } from '../scheduler/takeover.ts'
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
import {
  defaultSpotCheckOptions,
  SpotChecks,
  type SpotCheckOptions,
} from '../verification/spot-checks.ts'
import {
  DRAIN_REASON,
  NO_NODE_MESSAGE,
  defaultSchedulerOptions,
  type SchedulerOptions,
} from '../scheduler/work.ts'
import type { Limiter } from '../../tools/rate-limiter.ts'
import { background } from '../../tools/background.ts'
import { log } from '../../tools/log.ts'

export interface NetworkOptions {
  scheduler?: Partial<SchedulerOptions>
  /** A node silent for this long (15 s by default) is disconnected; heartbeats come every 5 s. */
  heartbeatTimeoutMs?: number
  /** A connected node's `last_seen` is written when its status changes, and otherwise at most
   * this often (60 s by default): see docs/scaling.md, "Heartbeats". */
  lastSeenRefreshMs?: number
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
  /** Spot checks of users' answers: rates and bounds (tests set the rates to 1 or 0). */
  spotChecks?: Partial<SpotCheckOptions>
  /** Scaled out: how long a dead process's lease lives on (10 s), and how often survivors look
   * for requests of dead processes (every 2 s). */
  leaseTtlMs?: number
  takeoverIntervalMs?: number
  /** Alone: how long after start-up the previous run's open requests are looked at, so that its
   * nodes can reconnect first and its queued requests run (5 s). */
  restartGraceMs?: number
}

export interface InferenceNetwork {
  flows: LinkFlows
  registry: NodeRegistry
  health: NodeHealth
  metering: Metering
  scheduler: Scheduler
  canaries: Canaries
  spotChecks: SpotChecks
  chat: ChatService
  leases: ProcessLeases
  takeover: Takeover
  /** Alone: takes over what the previous run left open now, without waiting for the grace. */
  recoverPrevious(): Promise<number>
  waitFlowTimeoutMs: number
  /** Link flows started, per client address (shared by every process when scaled out). */
  startFlowLimit: Limiter
  /**
   * Graceful drain: nothing new goes out, local nodes take no new jobs from other processes, the
   * queue goes to the other processes (or fails retryable when alone), jobs out on nodes may finish
   * until `deadlineMs`; what is still running then fails retryable. The lease is given up last.
   */
  drain(deadlineMs: number): Promise<void>
  close(): void
}

export async function createInferenceNetwork(
  core: CoreApp,
  options: NetworkOptions = {},
): Promise<InferenceNetwork> {
  // Scaled out (Redis configured), other processes may own node sockets, so a starting process
  // leaves nodes alone; open requests of dead processes are taken over (takeover.ts) either way.
  if (!core.config.redisUrl) await recoverAfterRestart(core)
  const leases: ProcessLeases = core.redis
    ? await RedisLeases.start(core.redis, core.processId, options.leaseTtlMs ?? LEASE_TTL_MS)
    : new LocalLeases(core.processId)
  // Holds awaiting a deleted request's charge that never came: released uncharged past the bound,
  // at start-up and every DELETION_HOLD_CHECK_MS. Alone (no Redis), a process that starts has no
  // job out, so none of them will be charged: all go at once.
  const deletionBoundMs = core.config.redisUrl ? DELETION_HOLD_BOUND_MS : 0
  await sweepDeletionHolds(core, { boundMs: deletionBoundMs })
  const deletionSweeper = setInterval(() => {
    sweepDeletionHolds(core).catch((err) => log.error({ err }, 'deletion hold sweep failed'))
  }, DELETION_HOLD_CHECK_MS)
  deletionSweeper.unref()
  // Holds left without an open request (crash, bug): released at start-up and every hour.
  await sweepStrandedHolds(core)
  const sweeper = setInterval(() => {
    sweepStrandedHolds(core).catch((err) => log.error({ err }, 'hold sweep failed'))
  }, HOLD_SWEEP_INTERVAL_MS)
  sweeper.unref()
  const flows = new LinkFlows(core.database, core, options.linkFlowTtlMs ?? LINK_FLOW_TTL_MS)
  const registry = new NodeRegistry(
    core,
    options.heartbeatTimeoutMs ?? 15_000,
    options.lastSeenRefreshMs,
  )
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
  const takeover = new Takeover(
    { core, leases, scheduler, registry, resume: (id) => chat.resume(id) },
    options.takeoverIntervalMs ?? 2000,
  )
  const handOffs = new Set<Promise<void>>()
  scheduler.handOff = (work) => {
    const p: Promise<void> = takeover
      .handOff(work)
      .catch((err) => log.error({ err }, 'hand-off failed'))
      .then(() => {
        handOffs.delete(p)
      })
    handOffs.add(p)
  }
  let startTimer: NodeJS.Timeout | null = null
  let recoverPrevious = async () => 0
  // Alone, what the previous run left is recovered once, after the restart's grace (below).
  await takeover.start({ claimDead: Boolean(core.redis) })
  if (!core.redis) {
    // Only what the previous run left: rows written later are this run's.
    const leftOpen = await takeover.leftOpen()
    recoverPrevious = () => {
      if (startTimer) clearTimeout(startTimer)
      const ids = new Set(leftOpen)
      leftOpen.clear()
      return takeover.recover(ids)
    }
    const recover = () => {
      recoverPrevious().catch((err) => log.error({ err }, 'restart recovery failed'))
    }
    if (leftOpen.size) startTimer = setTimeout(recover, options.restartGraceMs ?? 5000)
    startTimer?.unref()
  }
  const scores = new ReferenceScores(registry)
  // Earnings held while on probation: paid on verification, returned to payers on failure.
  const verdictHooks = {
    onGraduated: async (uow: UnitOfWork, nodeId: string) => {
      await releasePendingEarnings(uow, nodeId)
    },
    onFailed: async (uow: UnitOfWork, nodeId: string) => {
      await reversePendingEarnings(uow, nodeId, REVERSAL_REASON)
    },
  }
  const canaries = new Canaries(
    {
      core,
      registry,
      scheduler,
      metering,
      scores,
      sampling: (temperature) => chat.sampling(temperature),
      maxOutputTokens,
      hooks: verdictHooks,
    },
    { ...defaultCanaryOptions, ...options.canaries },
  )
  const spotChecks = new SpotChecks(
    { core, registry, scores, hooks: verdictHooks },
    { ...defaultSpotCheckOptions, ...options.spotChecks },
  )
  scheduler.onAnswered = (work, done) =>
    spotChecks.consider({
      requestId: work.requestId,
      user: work.user,
      modelId: work.modelId,
      prompt: work.prompt,
      sampling: work.sampling,
      nodeId: done.nodeId,
      nodeOwner: done.owner,
      answer: done.answer,
    })
  const stopRevoking = core.events.on((change) => {
    if (change.collection.name === 'nodes' && change.action === 'delete') {
      background(
        revokeCredentials(core.database.db, String(change.row.id)),
        "revoking a deleted node's credentials",
      )
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
    spotChecks,
    chat,
    leases,
    takeover,
    recoverPrevious: () => recoverPrevious(),
    waitFlowTimeoutMs: options.waitFlowTimeoutMs ?? 25_000,
    startFlowLimit: core.limits.create('link-flow', {
      points: startFlow.limit === Infinity ? 0 : startFlow.limit,
      windowSeconds: Math.ceil(startFlow.windowMs / 1000),
    }),
    async drain(deadlineMs: number) {
      const until = Date.now() + deadlineMs
      registry.startDraining()
      scheduler.startDraining()
      const waitFor = async (done: () => boolean) => {
        while (!done() && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
      }
      await waitFor(() => scheduler.load === 0 && registry.relayedJobs === 0)
      scheduler.abandonRunning(`${NO_NODE_MESSAGE} (${DRAIN_REASON})`)
      while (handOffs.size) await Promise.allSettled([...handOffs])
      await scheduler.flushWrites()
      takeover.close()
      await leases.release().catch(() => {})
    },
    close() {
      if (startTimer) clearTimeout(startTimer)
      takeover.close()
      leases.close()
      clearInterval(sweeper)
      clearInterval(deletionSweeper)
      stopRevoking()
      stopForgetting()
      stopCancelling()
      canaries.close()
      spotChecks.close()
      scores.close()
      scheduler.close()
      registry.close()
      background(metering.dispose(), 'disposing of the tokenizers')
    },
  }
}

/**
 * Alone, nothing of a previous run survives in memory: every node counts as offline until its
 * socket is back, and no job is out. Its open requests are taken over after the grace
 * (takeover.ts): queued ones run again, running ones fail retryable with their holds released.
 */
async function recoverAfterRestart(core: CoreApp) {
  await withUnitOfWork(core, async (uow) => {
    await uow.update('nodes', (q) => q.set({ status: 'offline' }).where('status', '!=', 'offline'))
    await uow.update('node_jobs', (q) =>
      q.set({ status: 'failed' }).where('status', 'in', ['pending', 'acked']),
    )
  })
}
