/**
 * @module The requests this process runs can be ended behind its back: scaled out, another
 * process ends a request it does not own when its owner cannot be reached in time (a cancel while
 * the bus is down), and a survivor fails the running requests of a process it took for dead (a
 * pause, a partition from Redis). Nothing then tells this process, and its node would run the
 * job to its end. So every few seconds the scheduler asks the database, which needs no bus, about
 * the requests it runs, and stops those that have ended, are gone or are owned by another process.
 * A write of one request that finds it no longer this process's asks the same of it alone
 * (`ownedElsewhere`).
 */
import { OPEN_REQUEST_STATUSES } from '@meshwork/protocol'
import type { Db } from '../../db/database.ts'
import { background } from '../../tools/background.ts'
import type { CoreApp } from '../app.ts'

/** How often the running requests are checked against the database. */
export const RUNNING_CHECK_MS = 5000

const OPEN = new Set<string>(OPEN_REQUEST_STATUSES)
/** Request ids per query: one bound parameter each, far below PostgreSQL's 65,535. */
const BATCH = 1000

/** The ids of `requestIds` no longer this process's to run: ended, gone or owned by another. */
export async function endedElsewhere(
  db: Db,
  requestIds: string[],
  processId: string,
): Promise<Set<string>> {
  const stopped = new Set<string>()
  for (let i = 0; i < requestIds.length; i += BATCH) {
    const batch = requestIds.slice(i, i + BATCH)
    const rows = await db
      .selectFrom('requests')
      .select(['id', 'status', 'lease_owner'])
      .where('id', 'in', batch)
      .execute()
    const stored = new Map(rows.map((r) => [String(r.id), r]))
    for (const id of batch) {
      const row = stored.get(id)
      if (!row || !OPEN.has(String(row.status)) || row.lease_owner !== processId) stopped.add(id)
    }
  }
  return stopped
}

/** Another process owns the request now (it took it over while this one's lease had lapsed). */
export async function ownedElsewhere(core: CoreApp, requestId: string): Promise<boolean> {
  const row = await core.database.db
    .selectFrom('requests')
    .select('lease_owner')
    .where('id', '=', requestId)
    .executeTakeFirst()
    .catch(() => undefined)
  return row !== undefined && row.lease_owner !== core.processId
}

/** A request a scheduler has, as the check sees it. */
interface HeldRequest {
  requestId: string
  /** Its last writes are under way: nothing to stop. */
  ending: boolean
}

/** The scheduler's periodic check of the requests it has, one check at a time. */
export class RunningCheck<T extends HeldRequest> {
  private last = Date.now()
  private checking = false

  /**
   * `held`: the scheduler's requests by id, as they are at each check; `stop`: stops one that is
   * no longer this process's (and forgets it).
   */
  constructor(
    private core: CoreApp,
    private options: { runningCheckMs: number },
    private held: Map<string, T>,
    private stop: (request: T) => void,
  ) {}

  /** Whether a check is due now (the scheduler's tick); if so, the next is due an interval on. */
  due(now: number): boolean {
    if (now - this.last < this.options.runningCheckMs) return false
    this.last = now
    return true
  }

  /** Stops what was ended behind this process's back, unless a check is still under way. */
  run(): void {
    if (this.checking) return
    const requests = [...this.held.values()].filter((r) => !r.ending)
    if (!requests.length) return
    this.checking = true
    const ids = requests.map((r) => r.requestId)
    const check = endedElsewhere(this.core.database.db, ids, this.core.processId)
      .then((stopped) => {
        for (const request of requests) {
          if (!stopped.has(request.requestId) || request.ending) continue
          if (this.held.get(request.requestId) !== request) continue
          this.stop(request)
        }
      })
      .finally(() => {
        this.checking = false
      })
    background(check, 'checking the running requests against the database')
  }
}
