/**
 * @module The requests this process runs can be ended behind its back: scaled out, another
 * process ends a request it does not own when its owner cannot be reached in time (a cancel while
 * the bus is down), and a survivor fails the running requests of a process it took for dead (a
 * pause, a partition from Redis). Nothing then tells this process, and its node would run the
 * job to its end. So every few seconds the scheduler asks the database, which needs no bus, about
 * the requests it runs, and stops those that have ended, are gone or are owned by another process.
 */
import { OPEN_REQUEST_STATUSES } from '@meshwork/protocol'
import type { Db } from '../../db/database.ts'

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
