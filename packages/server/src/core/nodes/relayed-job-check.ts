/**
 * @module Scaled out, a local node may run a job for another process, which stops it by sending
 * `job_cancel` over the bus. A cancel lost on the way (Redis down, or one message dropped) left
 * the node running the job to its end, its slot busy and its answer going nowhere. So the process
 * holding the node's socket also asks the database, which needs no bus: a relayed job whose
 * request has ended or is gone, or whose `node_jobs` row has ended, is stopped here as the lost
 * cancel would have stopped it. The registry runs the check on its sweep and when the bus is back.
 */
import { OPEN_REQUEST_STATUSES } from '@meshwork/protocol'
import type { Db } from '../../db/database.ts'
import { background } from '../../tools/background.ts'
import { log } from '../../tools/log.ts'
import type { NodeRelay, RelayedJob } from './node-relay.ts'
import type { NodeSession } from './node-session.ts'

/**
 * How long a relayed job may run without a `node_jobs` row before it counts as nobody's. The
 * offering process writes the row after the offer has gone out, behind the request's earlier
 * writes (scheduler.ts `dispatch`), so a young job's row may not be there yet; a row that never
 * comes means the offer was taken back (its request was lost to a survivor, or the write failed)
 * and the cancel that said so did not arrive.
 */
export const JOB_ROW_GRACE_MS = 10_000

/** What the database says of a relayed job; null where it has no such row. */
export interface StoredJob {
  requestStatus: string | null
  jobStatus: string | null
}

const OPEN_REQUEST = new Set<string>(OPEN_REQUEST_STATUSES)
const LIVE_JOB = new Set(['pending', 'acked'])
/** Relayed jobs read per query: two bound parameters each, far below PostgreSQL's 65,535. */
const BATCH = 1000

/** Whether nobody waits for a relayed job's answer any more. */
export function isAbandoned(job: RelayedJob, stored: StoredJob, now: number): boolean {
  if (stored.requestStatus === null) return true // deleted (with its conversation or account)
  if (!OPEN_REQUEST.has(stored.requestStatus)) return true
  if (stored.jobStatus !== null) return !LIVE_JOB.has(stored.jobStatus)
  return now - job.since >= JOB_ROW_GRACE_MS
}

/** The jobs of `jobs` nobody waits for: one query (per thousand jobs) for the lot. */
export async function abandonedRelayedJobs(
  db: Db,
  jobs: RelayedJob[],
  now = Date.now(),
): Promise<RelayedJob[]> {
  const abandoned: RelayedJob[] = []
  for (let i = 0; i < jobs.length; i += BATCH) {
    const batch = jobs.slice(i, i + BATCH)
    const rows = await db
      .selectFrom('requests as r')
      .leftJoin('node_jobs as j', (join) =>
        join.onRef('j.request', '=', 'r.id').on(
          'j.id',
          'in',
          batch.map((job) => job.jobId),
        ),
      )
      .select([
        'r.id as request',
        'r.status as request_status',
        'j.id as job',
        'j.status as job_status',
      ])
      .where('r.id', 'in', [...new Set(batch.map((job) => job.requestId))])
      .execute()
    const requests = new Map(rows.map((row) => [String(row.request), String(row.request_status)]))
    const jobRows = new Map(
      rows
        .filter((row) => row.job !== null)
        .map((row) => [String(row.job), String(row.job_status)]),
    )
    for (const job of batch) {
      const stored = {
        requestStatus: requests.get(job.requestId) ?? null,
        jobStatus: jobRows.get(job.jobId) ?? null,
      }
      if (isAbandoned(job, stored, now)) abandoned.push(job)
    }
  }
  return abandoned
}

/** The check of one process's relayed jobs, one at a time. */
export class RelayedJobCheck {
  private running = false
  private closed = false

  constructor(
    private db: Db,
    private relay: NodeRelay,
    /** A local node was told to stop a job: its slot is free. */
    private stopped: (session: NodeSession) => void,
  ) {}

  /** Checks in the background; nothing when no job is relayed, or while a check is under way. */
  run(): void {
    if (this.running || this.closed) return
    const jobs = this.relay.relayedJobs()
    if (!jobs.length) return
    this.running = true
    background(this.check(jobs), 'checking relayed jobs')
  }

  close(): void {
    this.closed = true
  }

  private async check(jobs: RelayedJob[]): Promise<void> {
    try {
      const abandoned = await abandonedRelayedJobs(this.db, jobs)
      if (this.closed) return
      for (const job of abandoned) {
        // Null when it ended meanwhile: its end or the cancel itself came during the query.
        const session = this.relay.cancelRelayed(job.jobId)
        if (!session) continue
        log.warn(
          { jobId: job.jobId, nodeId: job.nodeId },
          'relayed job stopped: its cancel was lost, nobody waits for it',
        )
        this.stopped(session)
      }
    } catch (err) {
      // The database is down (or closing): the next sweep tries again.
      if (!this.closed) log.error({ err }, 'checking relayed jobs failed')
    } finally {
      this.running = false
    }
  }
}
