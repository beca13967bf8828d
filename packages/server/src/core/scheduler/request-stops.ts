/**
 * @module The ways a request leaves the scheduler before its node has finished it: abandoned
 * (failed retryable), cancelled by its owner (paid for as produced), deleted with its rows, or
 * given up because it is no longer this process's (another process ended it or took it over).
 * Each takes the request out of the queue, or its job from its node, which is told to stop.
 */
import type { CoreApp } from '../app.ts'
import { background } from '../../tools/background.ts'
import { log } from '../../tools/log.ts'
import { cancellationOfNothing } from '../ledger/settlement.ts'
import { chargeDeletedAndPublish, loadRequestRow, setJobStatus } from './request-writes.ts'
import { cancelAndPublish } from './request-endings.ts'
import type { WorkBook } from './work-book.ts'
import type { Work } from './work.ts'

export class RequestStops {
  /** `onCapacity`: a slot may have come free (the scheduler looks at its queue again). */
  constructor(
    private book: WorkBook,
    private core: CoreApp,
    private onCapacity: () => void,
  ) {}

  /** See Scheduler.abandon. */
  abandon(requestId: string, message: string): boolean {
    const { book } = this
    const work =
      book.queue.find((w) => w.requestId === requestId) ??
      [...book.byJob.values()].find((w) => w.requestId === requestId)
    if (!work) return false
    book.unqueue(work)
    const job = book.takeBack(work)
    if (job) book.serial(work, () => setJobStatus(this.core, job.id, 'cancelled'))
    book.fail(work, message)
    this.onCapacity()
    return true
  }

  /** See Scheduler.cancel. */
  cancel(requestId: string): Promise<void> | null {
    const { book } = this
    const work = book.byRequest.get(requestId)
    if (!work || work.canary) return null
    if (work.ending) return work.chain
    work.ending = true
    book.unqueue(work)
    const job = work.job
    const cancellation = cancellationOfNothing(requestId)
    if (job) {
      // What the coordinator counted of the part streamed (no claim from the node: none came).
      const answer = job.meter.finish(null)
      book.takeBack(work)
      Object.assign(cancellation, {
        nodeId: job.nodeId,
        response: answer.text,
        tokensInput: work.estimatedInput,
        tokensOutput: answer.tokensOutput,
        processingTimeMs: job.acked ? Date.now() - job.acceptedAt : 0,
      })
      book.serial(work, () => setJobStatus(this.core, job.id, 'cancelled'))
    }
    // Being offered (between the queue and its node): dispatch sees `ending` and stops there.
    book.end(work, async () => {
      if (await cancelAndPublish(this.core, cancellation)) return
      // Deleted (its conversation or account) before this write: the deletion ended the request
      // and kept its hold, and found no job here to count (taken back above), so the part
      // streamed is charged from that hold as a deleted request's is (at most once), and the
      // hold released even when nothing was streamed.
      if (job && !(await loadRequestRow(this.core, requestId)))
        await chargeDeletedAndPublish(this.core, work, job.nodeId, cancellation.tokensOutput)
    })
    this.onCapacity()
    return work.chain
  }

  /** See Scheduler.onRequestDeleted. */
  deleted(requestId: string): void {
    const { book } = this
    const known = book.byRequest.get(requestId)
    if (known) {
      known.ending = true
      book.byRequest.delete(requestId)
    }
    const queued = book.queue.findIndex((w) => w.requestId === requestId)
    if (queued >= 0) {
      const [work] = book.queue.splice(queued, 1)
      book.checkIdle()
      // Offered before and back in the queue: a job row of the last offer may still have been
      // out when the deletion looked, which then kept the hold; nothing was streamed.
      if (work.offers > 0) book.serial(work, () => chargeDeletedAndPublish(this.core, work, '', 0))
      return
    }
    const work = [...book.byJob.values()].find((w) => w.requestId === requestId)
    const job = work?.job
    if (!work || !job) return
    book.takeBack(work)
    // What the coordinator counted of the part streamed (no claim from the node: none came).
    // Charged from the hold the deletion kept, which is released even when nothing was streamed.
    const tokensOutput = job.meter.finish(null).tokensOutput
    book.serial(work, () => chargeDeletedAndPublish(this.core, work, job.nodeId, tokensOutput))
    this.onCapacity()
  }

  /**
   * A request this process still had when it was queued again (a survivor failed it while this
   * process was paused, and its user retried it here): the old attempt must not run beside the
   * new one.
   */
  dropStale(work: Work, why = 'request queued again; its earlier attempt here stops'): void {
    this.book.unqueue(work)
    this.giveUp(work, why)
  }

  /**
   * This process's lease lapsed (a long pause, a partition from Redis) and a survivor took the
   * request over: the survivor runs it and ends it, so this process stops its job and forgets it
   * without writing anything (failing it here would end the survivor's run; its hold is the
   * survivor's to settle or release).
   */
  giveUp(work: Work, why = 'request taken over by another process; its job here stops'): void {
    log.warn({ requestId: work.requestId }, why)
    this.book.takeBack(work)
    this.onCapacity()
    work.ending = true
    this.book.forget(work)
    // A canary ended elsewhere is void here: its node is neither judged nor kept waiting for it.
    if (work.canary) background(work.canary.done(null, 0), 'voiding a canary ended elsewhere')
  }
}
