/**
 * @module No request outlives its process (issue 8). Every open request names its owner process
 * (`requests.lease_owner`); a process is alive while its lease is (leases.ts). Every few seconds
 * (and at once when a draining process says so) each process looks for open requests whose owner
 * is no longer alive, claims them with one guarded UPDATE (so exactly one survivor gets each), and:
 * - a queued one is scheduled again here, under the same hold;
 * - a running one (its answer was being streamed to the dead process) fails with `can_retry`, its
 *   hold released, and its node is told to stop the job, wherever that node's socket lives;
 * - what cannot be rebuilt (API requests, whose prompt was the client's; canaries) fails retryable.
 * A process that starts alone (no Redis) does the same for what its previous run left open.
 * Every process also adopts its own orphans the same way: open requests it owns that its scheduler
 * does not have. A send whose COMMIT reached PostgreSQL but whose answer did not come back in time
 * was answered 503, and its request stayed pending, its credits held, for as long as the process
 * lived (no survivor takes over a live process's requests).
 */
import type { CoreApp } from '../app.ts'
import type { NodeRegistry } from '../nodes/node-registry.ts'
import { OPEN_STATUSES } from '../ledger/settlement.ts'
import { formatDate, nowDate } from '../../tools/dates.ts'
import type { ProcessLeases } from './leases.ts'
import type { Scheduler } from './scheduler.ts'
import type { WorkItem } from './work.ts'
import { failAndPublish } from './request-writes.ts'
import { withSingleWrite } from '../records/unit-of-work.ts'
import { log } from '../../tools/log.ts'

/** What a user sees on a request whose coordinator died while its answer was being written. */
export const TAKEN_OVER_MESSAGE =
  'The coordinator running this request stopped before it finished. Please try again.'
/** A queued request no process could take (the last one shut down). */
export const SHUT_DOWN_MESSAGE =
  'The coordinator shut down before this request could run. Please try again.'

const CHANNEL = 'leases'
/** An open request of this process not in its scheduler for this long is an orphan. A send puts
 * its request in the scheduler right after its transaction commits; a claimed one is being adopted
 * (`adopting`) from its claim until it is in the scheduler or ended. */
export const ORPHAN_AGE_MS = 10_000
type LeaseMessage = { kind: 'handoff'; from: string }

export interface TakeoverDeps {
  core: CoreApp
  leases: ProcessLeases
  scheduler: Scheduler
  registry: NodeRegistry
  /** Rebuilds a stored pending request's work (ChatService.resume); null: it cannot be. */
  resume(requestId: string): Promise<WorkItem | null>
}

export class Takeover {
  private timer: NodeJS.Timeout | null = null
  private sweeping: Promise<number> | null = null
  private again = false
  private closed = false
  /** Sweeps are failing: logged once, until one works again. */
  private failing = false
  /** Requests being adopted now. Alone, the restart's recovery adopts outside the sweeps: a sweep
   * finding one of them orphaned meanwhile (claimed, not yet in the scheduler) adopted it twice. */
  private adopting = new Set<string>()
  private unsubscribe: () => void

  constructor(
    private deps: TakeoverDeps,
    private intervalMs: number,
  ) {
    this.unsubscribe = deps.core.bus.subscribe(CHANNEL, (m) => {
      const message = m as LeaseMessage
      if (message.kind === 'handoff' && message.from !== deps.core.processId)
        this.sweep().catch(() => {})
    })
  }

  /** Whether the sweeps claim dead processes' requests (scaled out) or only adopt orphans (alone:
   * what the previous run left is recovered once, after the restart's grace). */
  private claimDead = true

  /** Sweeps now (what dead processes left, scaled out), then every interval. */
  async start({ claimDead = true } = {}): Promise<void> {
    this.claimDead = claimDead
    await this.sweep()
    this.timer = setInterval(() => {
      this.sweep().catch(() => {})
    }, this.intervalMs)
    this.timer.unref()
  }

  /** Alone: the requests a previous run left open (nobody else can die while this one runs). */
  async leftOpen(): Promise<Set<string>> {
    const rows = await this.deps.core.database.db
      .selectFrom('requests')
      .select('id')
      .where('status', 'in', OPEN_STATUSES)
      .where('lease_owner', '!=', this.deps.core.processId)
      .execute()
    return new Set(rows.map((r) => String(r.id)))
  }

  /** Alone: takes over these requests of the previous run. */
  async recover(ids: Set<string>): Promise<number> {
    if (!ids.size) return 0
    return this.sweepOnce(ids)
  }

  /** Requests taken over by this sweep (tests). A sweep asked for during one runs after it. */
  sweep(): Promise<number> {
    if (this.closed) return Promise.resolve(0)
    if (this.sweeping) {
      this.again = true
      return this.sweeping
    }
    this.sweeping = (async () => {
      let total = 0
      do {
        this.again = false
        const once = async () =>
          (this.claimDead ? await this.sweepOnce() : 0) + (await this.adoptOrphans())
        total += await once().then(
          (taken) => {
            if (this.failing) log.info('request takeover works again')
            this.failing = false
            return taken
          },
          (err) => {
            // Once per run of failures (Redis or the database away): not every 2 s of an outage.
            if (!this.closed && !this.failing) log.error({ err }, 'request takeover failed')
            this.failing = true
            return 0
          },
        )
      } while (this.again && !this.closed)
      return total
    })().finally(() => {
      this.sweeping = null
    })
    return this.sweeping
  }

  private async sweepOnce(only?: Set<string>): Promise<number> {
    const { core, leases } = this.deps
    const db = core.database.db
    const open = await db
      .selectFrom('requests')
      .select(['id', 'lease_owner'])
      .where('status', 'in', OPEN_STATUSES)
      .where('lease_owner', '!=', core.processId)
      .execute()
      .then((rows) => (only ? rows.filter((r) => only.has(String(r.id))) : rows))
    if (!open.length) return 0
    const alive = await leases.alive(open.map((r) => String(r.lease_owner)))
    let taken = 0
    for (const r of open) {
      const owner = String(r.lease_owner)
      if (alive.has(owner) || this.closed) continue
      // `lease_owner` is no field of the collection: no record changes, so no unit of work.
      const claimed = await db
        .updateTable('requests')
        .set({ lease_owner: core.processId })
        .where('id', '=', String(r.id))
        .where('lease_owner', '=', owner)
        .where('status', 'in', OPEN_STATUSES)
        .executeTakeFirst()
      if (Number(claimed.numUpdatedRows) !== 1) continue // another survivor was first, or it ended
      taken++
      await this.adopt(String(r.id))
    }
    return taken
  }

  /** Open requests of this process, untouched for ORPHAN_AGE_MS, that its scheduler does not have. */
  private async adoptOrphans(): Promise<number> {
    const { core, scheduler } = this.deps
    const rows = await core.database.db
      .selectFrom('requests')
      .select('id')
      .where('status', 'in', OPEN_STATUSES)
      .where('lease_owner', '=', core.processId)
      .where('updated', '<', formatDate(new Date(Date.now() - ORPHAN_AGE_MS)))
      .execute()
    let adopted = 0
    for (const { id } of rows) {
      if (this.closed || scheduler.holds(String(id)) || this.adopting.has(String(id))) continue
      log.warn({ requestId: id }, 'adopting an open request this process had lost track of')
      adopted++
      await this.adopt(String(id))
    }
    return adopted
  }

  /** A request this process just claimed from a dead owner, or found orphaned. */
  private async adopt(requestId: string): Promise<void> {
    this.adopting.add(requestId)
    try {
      await this.adoptNow(requestId)
    } finally {
      this.adopting.delete(requestId)
    }
  }

  private async adoptNow(requestId: string): Promise<void> {
    const { core, registry, scheduler } = this.deps
    const db = core.database.db
    // Its jobs belong to nobody now: their nodes stop them, their slots come free.
    const jobs = await db
      .selectFrom('node_jobs')
      .select(['id', 'node'])
      .where('request', '=', requestId)
      .where('status', 'in', ['pending', 'acked'])
      .execute()
    for (const job of jobs) {
      await withSingleWrite(core, (uow) =>
        uow.update('node_jobs', (q) =>
          q.set({ status: 'failed', updated: nowDate() }).where('id', '=', job.id),
        ),
      )
      registry.cancelOrphanJob(String(job.node), String(job.id))
    }
    const row = await db
      .selectFrom('requests')
      .select(['status', 'user'])
      .where('id', '=', requestId)
      .executeTakeFirst()
    if (!row) return
    const work =
      row.status === 'pending' ? await this.deps.resume(requestId).catch(() => null) : null
    if (work) {
      scheduler.enqueue(work)
      return
    }
    await failAndPublish(core, requestId, TAKEN_OVER_MESSAGE)
  }

  /**
   * A draining process's queued request: given up to the other live processes (they claim it at
   * once), or failed retryable with its hold released when there is no other process.
   */
  async handOff(work: WorkItem): Promise<void> {
    const { core, leases } = this.deps
    const others = await leases.others().catch(() => 0)
    if (others > 0) {
      // Only `lease_owner` (no field of the collection) changes: nothing to publish.
      await core.database.db
        .updateTable('requests')
        .set({ lease_owner: '' })
        .where('id', '=', work.requestId)
        .where('lease_owner', '=', core.processId)
        .execute()
      core.bus.publish(CHANNEL, { kind: 'handoff', from: core.processId } satisfies LeaseMessage)
      return
    }
    await failAndPublish(core, work.requestId, SHUT_DOWN_MESSAGE)
  }

  close(): void {
    this.closed = true
    if (this.timer) clearInterval(this.timer)
    this.unsubscribe()
  }
}
