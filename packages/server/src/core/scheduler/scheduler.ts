/**
 * @module The scheduler: queued requests wait for a node with a free slot, go out as `node_jobs`
 * (pending -> acked -> completed/failed), stream back through coalesced realtime updates, are
 * metered by the coordinator (metering/answer-meter.ts) and settled once. A job whose node drops,
 * stalls or fails goes to another owner's node with its partial text discarded (the user sees one
 * answer); when no node is left the request fails with `can_retry` and its hold is released.
 * Canaries run the same way on the one node they test, and end in verification, not settlement.
 */
import type { CoreApp } from '../app.ts'
import type { Row } from '../records/serialize.ts'
import type { MeteredAnswer } from '../metering/answer-meter.ts'
import { OPEN_STATUSES } from '../ledger/settlement.ts'
import type { FailureKind, NodeHealth } from '../nodes/node-health.ts'
import type { NodeRegistry, RegistryListener } from '../nodes/node-registry.ts'
import { CoalescedPublisher } from './coalesced-publisher.ts'
import { CandidateCache } from './candidate-cache.ts'
import { canaryChoice, chooseNode, type CandidateRow, type NodeChoice } from './pick-node.ts'
import { background } from '../../tools/background.ts'
import { loadRequestRow, setJobStatus } from './request-writes.ts'
import { markAccepted, recordJob, type JobRowsContext } from './job-rows.ts'
import { endCompleted, stopRetrying } from './request-endings.ts'
import { publishPartial, publishRequeued } from './partial-events.ts'
import { noteFullAnswer } from './full-node.ts'
import { ChoiceRetries } from './choice-retries.ts'
import { WorkBook } from './work-book.ts'
import { RequestStops } from './request-stops.ts'
import {
  ATTEMPT_ENDED,
  FULL_NODE_PAUSE_MS,
  MAX_OFFERS,
  NO_NODE_MESSAGE,
  ASK_AGAIN_LATER,
  DRAIN_REASON,
  type JobFrame,
  type SchedulerOptions,
  awayWaitOver,
  newJob,
  newWork,
  type Work,
  type WorkItem,
} from './work.ts'
import { log } from '../../tools/log.ts'
import { PauseWatch } from '../../tools/pause-watch.ts'
import { RunningCheck } from './running-check.ts'
import { newRecordId } from '../../tools/ids.ts'

export { SAVE_FAILED_MESSAGE } from './request-endings.ts'

const OPEN = new Set<string>(OPEN_STATUSES)
/** How often running jobs are looked at for silence and deadlines. */
const STALL_CHECK_MS = 500

export class Scheduler implements RegistryListener, JobRowsContext {
  private choiceRetries = new ChoiceRetries(() => this.onCapacity())
  /** The requests this scheduler has, and their writes in order. */
  readonly book: WorkBook
  /** How a request leaves before its node has finished it (request-stops.ts). */
  readonly stops: RequestStops
  private pumping = false
  private pumpAgain = false
  private timer: NodeJS.Timeout
  private pauses = new PauseWatch(STALL_CHECK_MS)
  private runningCheck: RunningCheck<Work>
  private closed = false
  /** Draining (graceful shutdown): nothing new goes out; what is queued goes to `handOff`. */
  private draining = false
  /** Where queued work goes while draining (another process, or failed retryable when alone). */
  handOff: ((work: WorkItem) => void) | null = null
  /** Told of each user's answer once it is settled (verification/spot-checks.ts); never awaited. */
  onAnswered:
    | ((work: WorkItem, done: { nodeId: string; owner: string; answer: MeteredAnswer }) => void)
    | null = null
  /** The nodes serving each model, kept between passes. */
  private candidates: CandidateCache

  constructor(
    readonly core: CoreApp,
    readonly registry: NodeRegistry,
    private health: NodeHealth,
    private options: SchedulerOptions,
  ) {
    registry.listener = this
    this.book = new WorkBook(
      core,
      registry,
      () => this.closed,
      () => this.pumping,
    )
    this.stops = new RequestStops(this.book, core, () => this.onCapacity())
    this.candidates = new CandidateCache(() => core.database.db, core.events, core.bus)
    this.runningCheck = new RunningCheck(core, options, this.book.byRequest, (work) =>
      this.stops.dropStale(work, 'request ended or taken over elsewhere; its attempt here stops'),
    )
    this.timer = setInterval(() => this.checkStalls(), STALL_CHECK_MS)
    this.timer.unref()
  }

  /** Queues a request; answers its position in the queue (0: goes out first). `row`: the request
   * as its send stored it a moment ago (otherwise it is read before the offer). */
  enqueue(item: WorkItem, row?: Row): number {
    const work = newWork(item, row ?? null)
    const stale = this.book.byRequest.get(item.requestId)
    if (stale) this.stops.dropStale(stale)
    this.book.byRequest.set(item.requestId, work)
    this.book.queue.push(work)
    const position = this.book.queue.filter((w) => w.modelId === item.modelId).length - 1
    this.onCapacity()
    return position
  }

  /** Requests waiting plus running. */
  get load(): number {
    return this.book.load
  }

  /** Whether the request is this scheduler's (queued, offered or running). */
  holds(requestId: string): boolean {
    return this.book.byRequest.has(requestId)
  }

  /** Requests waiting for a node. */
  get queued(): number {
    return this.book.queue.length
  }

  /** Jobs out on nodes. */
  get running(): number {
    return this.book.byJob.size
  }

  onCapacity(): void {
    background(this.pump(), 'scheduler pump')
  }

  /**
   * The node's socket closed: its jobs go to other nodes. The loss counts as one failure toward a
   * bench however many jobs it held, and costs the reputation of each job. Counted as a failure
   * per job, one crash of an agent running three jobs benched an honest node for 5 minutes (npm
   * run chaos killing agents left no node at all); a node dropping on purpose is still benched
   * after three drops, and one dropping many jobs at a time loses their reputation (review: 63 jobs
   * dropped cost one unit before that).
   */
  onNodeGone(nodeId: string): void {
    const dropped = [...this.book.byJob.values()].filter((work) => work.job?.nodeId === nodeId)
    // A canary's loss is the one held against the node: that also fails the canary.
    dropped.sort((a, b) => Number(Boolean(b.canary)) - Number(Boolean(a.canary)))
    for (const [i, work] of dropped.entries())
      this.reassign(work, ATTEMPT_ENDED.offline, i === 0 ? 'dropped' : null)
    if (dropped.length > 1)
      background(this.health.penalize(nodeId, dropped.length - 1), "a dropped node's reputation")
    this.onCapacity()
  }

  onJobFrame(nodeId: string, frame: JobFrame): void {
    const work = this.book.byJob.get(frame.job_id)
    if (!work?.job || work.job.nodeId !== nodeId) return // a stale frame of a job given away
    const job = work.job
    // Measured speed runs from the acceptance (health.success): an acceptance repeated later, or
    // text and an end before any, would let the node move its own clock. They are ignored; an
    // offer the node never accepts times out as usual.
    const outOfOrder = job.acked
      ? frame.type === 'job_accepted'
      : frame.type === 'job_chunk' || frame.type === 'job_done'
    if (outOfOrder) return
    switch (frame.type) {
      case 'job_accepted':
        job.acked = true
        job.acceptedAt = job.lastActivity = Date.now()
        work.fullRun = null
        return this.book.serial(work, () => markAccepted(this, work, job.id, nodeId))
      case 'job_chunk':
        job.meter.push(frame.text, frame.tokens)
        // An empty chunk changes nothing: it neither keeps the job alive nor delays the first text.
        if (!frame.text) return
        job.lastActivity = Date.now()
        work.publisher?.touch()
        return
      case 'job_rejected': {
        // Only instead of an acceptance: "full" after one (text streamed) is a failed job, else
        // accept, stream, "full" went round for ever at no cost (its acceptance ends a full run).
        const later = !job.acked && ASK_AGAIN_LATER.get(frame.reason)
        if (later) return this.retryLater(work, nodeId, later)
        return this.reassign(work, ATTEMPT_ENDED.rejected, 'rejected', frame.reason)
      }
      case 'job_failed':
        return this.reassign(work, ATTEMPT_ENDED.failed, 'failed', frame.error)
      case 'job_done':
        return this.complete(work, nodeId, frame)
    }
  }

  /**
   * Takes a request off the network, queued or running (its node is told to stop), and fails it:
   * its hold is released and nothing is charged. False when it is not this scheduler's.
   */
  abandon(requestId: string, message: string): boolean {
    return this.stops.abandon(requestId, message)
  }

  /**
   * Stops a request its owner cancelled (`POST /api/requests/cancel`, a `/v1` client gone): a
   * queued one leaves the queue, a running one's node is told to stop at once; the request ends
   * `cancelled` with the text the coordinator counted so far, paid for as produced (nothing when
   * nothing was), its hold released. Answers a promise that settles once the request has ended
   * (also when it was already ending: completed, failed or cancelled), or null when this
   * scheduler does not have it (another process may).
   */
  cancel(requestId: string): Promise<void> | null {
    return this.stops.cancel(requestId)
  }

  /**
   * The request's rows are gone (its conversation or account was deleted; the deletion already
   * ended it and released its hold): drop it from the queue, or cancel its job and charge the part
   * its node had streamed. Every process hears the deletion; only the one running it acts.
   */
  onRequestDeleted(requestId: string): void {
    this.stops.deleted(requestId)
  }

  /** Resolves when nothing is queued or running (tests, shutdown). */
  idle(): Promise<void> {
    return this.book.idle()
  }

  /** Stops sending work out: queued requests (now and later) go to `handOff`; jobs out on
   * nodes run on. */
  startDraining(): void {
    this.draining = true
    this.onCapacity()
  }

  /** Takes every running request off its node and fails it retryable (a drain's deadline). */
  abandonRunning(message: string): void {
    for (const work of [...this.book.byJob.values()]) this.abandon(work.requestId, message)
  }

  /** Resolves when the database writes begun so far (and those they lead to) are done. */
  flushWrites(): Promise<void> {
    return this.book.flushWrites()
  }

  /** How many active nodes serve the model and are online or busy (a send's availability). */
  onlineNodes(modelId: string): Promise<number> {
    return this.candidates.onlineCount(modelId)
  }

  close(): void {
    this.closed = true
    this.candidates.close()
    stopRetrying(this.core)
    clearInterval(this.timer)
    this.choiceRetries.close()
    for (const w of this.book.byJob.values()) w.publisher?.stop()
  }

  private async pump(): Promise<void> {
    if (this.closed) return
    if (this.draining) {
      const queued = this.book.queue.splice(0)
      for (const work of queued) {
        // A canary is for this process's own check; a request goes to whoever can run it.
        if (work.canary || !this.handOff)
          this.book.fail(work, `${NO_NODE_MESSAGE} (${DRAIN_REASON})`)
        else this.handOff(work)
      }
      this.book.checkIdle()
      return
    }
    if (this.pumping) {
      this.pumpAgain = true
      return
    }
    this.pumping = true
    try {
      do {
        this.pumpAgain = false
        // The nodes serving each model, read once per pass: a pass over a long queue (every send
        // and every answer's end starts one) would otherwise run one query per waiting request.
        const candidates = new Map<string, Promise<CandidateRow[]>>()
        // Models with no free node for a request that excludes none: every other such request of
        // the model waits too, without looking through its nodes again (a slot freed meanwhile
        // starts another pass).
        const full = new Set<string>()
        for (const work of [...this.book.queue]) {
          const fresh = !work.canary && work.tried.size === 0 && work.triedOwners.size === 0
          if (fresh && full.has(work.modelId)) continue
          const choice = await this.choose(work, candidates).catch((err: unknown) =>
            this.chooseFailed(work, err),
          )
          if (!choice) continue
          if (fresh && !choice.node && choice.anyEligible) full.add(work.modelId)
          // Deleted (or otherwise taken out) while the choice was made.
          const index = this.book.queue.indexOf(work)
          if (index < 0) continue
          // A connected node could run it (busy or not): no longer waiting for one to come back.
          if (choice.anyEligible) work.awaySince = null
          if (choice.node) {
            this.book.queue.splice(index, 1)
            // One request's failure must not hold up the ones queued behind it.
            await this.dispatch(work, choice).catch((err) => {
              log.error({ err }, 'scheduler dispatch failed')
              if (!work.job) this.book.fail(work, NO_NODE_MESSAGE)
            })
          } else if (!choice.anyEligible) {
            // Its nodes are between connections: it waits for one to say hello again (a hello
            // starts a pass), for a while (checkStalls looks again).
            if (choice.anyAway && !awayWaitOver(work, this.options.reconnectWaitMs)) continue
            this.book.queue.splice(index, 1)
            this.book.fail(
              work,
              work.lastError ? `${NO_NODE_MESSAGE} (${work.lastError})` : NO_NODE_MESSAGE,
            )
          }
        }
      } while (this.pumpAgain)
    } catch (err) {
      log.error({ err }, 'scheduler pump failed')
    } finally {
      this.pumping = false
      this.book.checkIdle()
    }
  }

  /** A canary goes to its node only, while it waits for it; a request to the best node. */
  private async choose(
    work: Work,
    candidates: Map<string, Promise<CandidateRow[]>>,
  ): Promise<NodeChoice> {
    if (work.canary)
      return canaryChoice(work.canary.nodeId, work, this.registry, this.options.canaryWaitMs)
    let rows = candidates.get(work.modelId)
    if (!rows) {
      rows = this.candidates.candidates(work.modelId)
      candidates.set(work.modelId, rows)
      // A failed read is tried again by the next request of the pass, not shared by all of them.
      rows.catch(() => candidates.delete(work.modelId))
    }
    return chooseNode(await rows, this.registry, {
      excludeNodes: work.tried,
      excludeOwners: work.triedOwners,
      // A request that already failed once does not gamble on an unverified node again.
      probationShare: work.triedOwners.size === 0 ? this.options.probationShare : 0,
      random: this.options.random,
    })
  }

  private async dispatch(work: Work, choice: NodeChoice): Promise<void> {
    const session = choice.node!
    const nodeId = session.nodeId
    // The stored row is the base of partial events: known before the first chunk can arrive.
    work.row ??= await loadRequestRow(this.core, work.requestId)
    // Gone (deleted with its conversation), or ended (cancelled before it was queued here):
    // nothing to run, and nothing may block the requests queued behind it.
    if (!work.row || work.ending || !OPEN.has(String(work.row.status)))
      return this.book.forget(work)
    const jobId = newRecordId()
    work.tried.add(nodeId)
    work.offers++
    // Its deadline is held to the speed the coordinator measured on the node (work.ts, newJob).
    work.job = newJob(work, jobId, nodeId, choice, this.options.deadline)
    this.book.byJob.set(jobId, work)
    session.jobs.add(jobId)
    work.publisher = new CoalescedPublisher(this.options.streamIntervalMs, () =>
      publishPartial(this.core, work),
    )
    // The job's row is written after the offer has gone out (the first token waits for no write),
    // first on the request's chain: the job's later writes (accepted, ended) follow it. A process
    // that dies in between takes the offer with it: the node drops jobs of a closed socket.
    this.book.serial(work, () => recordJob(this, work, jobId, nodeId))
    const sent = session.send({
      type: 'job_offer',
      job_id: jobId,
      request_id: work.requestId,
      model_id: work.modelId,
      prompt: work.prompt,
      sampling: work.sampling,
    })
    if (!sent) this.reassign(work, ATTEMPT_ENDED.offline, 'dropped')
  }

  private complete(work: Work, nodeId: string, frame: Extract<JobFrame, { type: 'job_done' }>) {
    const job = work.job!
    const elapsedMs = Date.now() - job.acceptedAt
    // What is billed and stored is what the coordinator counted, cut at the output budget.
    const answer = job.meter.finish(frame.tokens_output)
    // The whole answer reaches subscribers now; the completed record follows the settlement.
    publishPartial(this.core, work)
    this.book.release(work)
    work.ending = true
    const finished = {
      jobId: job.id,
      nodeId,
      answer,
      claimedOutput: frame.tokens_output,
      elapsedMs,
      processingTimeMs: frame.processing_time_ms,
    }
    const owner = job.owner
    this.book.end(work, async () => {
      await endCompleted(this.core, this.health, work, finished)
      // Only now, the answer settled: a spot check never delays or changes it.
      if (!work.canary) this.onAnswered?.(work, { nodeId, owner, answer })
    })
    this.onCapacity()
  }

  /**
   * The node turned the offer down for no fault of its own (full after all, its model still
   * loading; `reason`: what the user may read): it may take the request again once it has had a
   * moment, unlike a node that dropped or failed it.
   */
  private retryLater(work: Work, nodeId: string, reason: string) {
    const session = this.registry.get(nodeId)
    if (session) session.fullUntil = Date.now() + FULL_NODE_PAUSE_MS
    const owner = work.job?.owner ?? ''
    // An offer not yet accepted keeps the time it went out.
    const offeredAt = work.job?.acceptedAt ?? Date.now()
    this.reassign(work, reason, null)
    // Too long answered "full" without a break: it fails retryable, nothing charged (full-node.ts).
    if (noteFullAnswer(work, nodeId, owner, offeredAt, this.options.stallMs)) {
      this.book.unqueue(work)
      return this.book.fail(work, `${NO_NODE_MESSAGE} (${reason})`)
    }
    setTimeout(() => this.onCapacity(), FULL_NODE_PAUSE_MS + 10).unref()
  }

  /**
   * Takes the job away from its node and queues the request again, at the front. `reason` is the
   * coordinator's own (users may see it); `failure` is held against the node (null: no fault, as
   * for a full node), with the node's own words for its owner.
   */
  private reassign(work: Work, reason: string, failure: FailureKind | null, nodeText = '') {
    const job = work.job
    if (!job) return
    this.book.release(work)
    work.lastError = reason
    work.triedOwners.add(job.owner)
    const session = this.registry.get(job.nodeId)
    session?.send({ type: 'job_cancel', job_id: job.id })
    this.book.serial(work, async () => {
      await setJobStatus(this.core, job.id, 'failed')
      if (failure) await this.health.failure(job.nodeId, failure, nodeText)
      if (work.row) publishRequeued(this.core, work.row)
    })
    if (work.canary && failure) return this.book.fail(work, `${NO_NODE_MESSAGE} (${reason})`)
    if (work.tried.size >= this.options.maxAttempts || work.offers >= MAX_OFFERS) {
      this.book.fail(work, `${NO_NODE_MESSAGE} (${reason})`)
      return
    }
    this.book.queue.unshift(work)
    this.onCapacity()
  }

  /** Choosing a node read the database and failed: tried again, a few times (choice-retries.ts). */
  private chooseFailed(work: Work, err: unknown): null {
    // Reads cut off by shutdown are expected; restart recovery deals with their requests.
    if (this.closed) return null
    if (this.choiceRetries.failed(work, err)) {
      this.book.unqueue(work)
      this.book.fail(work, NO_NODE_MESSAGE)
    }
    return null
  }

  private checkStalls() {
    // Woken from a pause of this process: the nodes' frames of meanwhile are still unread.
    if (this.pauses.wasPaused()) return
    // Requests waiting for nodes to come back fail once the wait is over, even if none does.
    if (this.book.queue.some((w) => w.awaySince !== null)) this.onCapacity()
    const now = Date.now()
    // What was ended behind this process's back stops (running-check.ts).
    if (this.runningCheck.due(now) && !this.closed) this.runningCheck.run()
    for (const work of [...this.book.byJob.values()]) {
      const job = work.job
      if (!job) continue
      const limit = job.acked ? this.options.stallMs : this.options.offerTimeoutMs
      if (now - job.lastActivity > limit) this.reassign(work, ATTEMPT_ENDED.stalled, 'stalled')
      else if (now > job.deadline) this.reassign(work, ATTEMPT_ENDED.slow, 'stalled')
    }
  }
}
