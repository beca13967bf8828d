/**
 * @module The rows of a job once it is out: the `node_jobs` row written after the offer has gone
 * (the first token waits for no write), and the request marked `processing` when the node
 * accepts. Either may find that the request is no longer this process's to run, or gone.
 */
import type { CoreApp } from '../app.ts'
import type { NodeRegistry } from '../nodes/node-registry.ts'
import { log } from '../../tools/log.ts'
import {
  createJob,
  loadRequestRow,
  type JobRecord,
  markProcessing,
  setJobStatus,
} from './request-writes.ts'
import { partialRow } from './partial-events.ts'
import type { RequestStops } from './request-stops.ts'
import { ownedElsewhere } from './running-check.ts'
import type { WorkBook } from './work-book.ts'
import { NO_NODE_MESSAGE, type Work } from './work.ts'

/** What the job's writes act on: the scheduler's books and nodes. */
export interface JobRowsContext {
  core: CoreApp
  book: WorkBook
  registry: NodeRegistry
  stops: RequestStops
  /** A slot may be free again: look at the queue. */
  onCapacity(): void
}

/** Writes the row of a job just offered; takes the job back when that cannot be done. */
export async function recordJob(
  ctx: JobRowsContext,
  work: Work,
  jobId: string,
  nodeId: string,
): Promise<void> {
  const stillOffered = () => work.job?.id === jobId
  let stored: JobRecord | 'failed' = 'failed'
  try {
    stored = await createJob(ctx.core, jobId, work.requestId, nodeId)
  } catch (err) {
    log.error({ err, requestId: work.requestId }, 'recording a job failed')
  }
  if (stored === 'stored' || !stillOffered()) return
  if (stored === 'lost') return ctx.stops.giveUp(work)
  // The request was deleted meanwhile, or its job cannot be recorded: the node stops, and a
  // request still there fails retryable (nothing was charged, its hold is released).
  ctx.book.release(work)
  ctx.registry.get(nodeId)?.send({ type: 'job_cancel', job_id: jobId })
  ctx.onCapacity()
  if (work.ending) return
  const gone =
    stored === 'gone' || !(await loadRequestRow(ctx.core, work.requestId).catch(() => work.row))
  if (gone) return ctx.book.forget(work)
  ctx.book.fail(work, NO_NODE_MESSAGE)
}

/** The node accepted the job: the request is `processing`, the job `acked`. */
export async function markAccepted(
  ctx: JobRowsContext,
  work: Work,
  jobId: string,
  nodeId: string,
): Promise<void> {
  if (work.job?.id === jobId) {
    // The request's `processing` event first (its subscriber waits for it), the job row after.
    // Its event is the stored row with the text streamed so far (while the job is still this one).
    const row = await markProcessing(ctx.core, work.requestId, nodeId, (stored) =>
      work.job?.id === jobId ? partialRow(stored, work) : stored,
    )
    if (row && work.job?.id === jobId) work.row = row
    if (!row && work.job?.id === jobId && (await ownedElsewhere(ctx.core, work.requestId)))
      return ctx.stops.giveUp(work)
  }
  await setJobStatus(ctx.core, jobId, 'acked')
}
