/**
 * @module The scheduler: queued requests wait for a node with a free slot, go out as `node_jobs`
 * (pending -> acked -> completed/failed), stream back through coalesced realtime updates, and are
 * settled once. A job whose node drops, stalls or fails goes to another node with its partial
 * text discarded (the user sees one answer); when no node is left the request fails with
 * `can_retry` and its hold is released.
 */
import type { CoreApp } from '../app.ts'
import type { Row } from '../records/serialize.ts'
import { requireCollection } from '../collections/registry.ts'
import { penalizeNode } from '../ledger/settlement.ts'
import type { NodeRegistry, RegistryListener } from '../nodes/node-registry.ts'
import { CoalescedPublisher } from './coalesced-publisher.ts'
import { pickNode } from './pick-node.ts'
import {
  createJob,
  loadRequestRow,
  failAndPublish,
  markProcessing,
  setJobStatus,
  settleAndPublish,
} from './request-writes.ts'
import {
  FULL_NODE_PAUSE_MS,
  MAX_OFFERS,
  NO_NODE_MESSAGE,
  NO_SLOT_REASON,
  type JobFrame,
  type SchedulerOptions,
  type Work,
  type WorkItem,
} from './work.ts'

export class Scheduler implements RegistryListener {
  private queue: Work[] = []
  private byJob = new Map<string, Work>()
  private pumping = false
  private pumpAgain = false
  private timer: NodeJS.Timeout
  private idleWaiters: Array<() => void> = []
  private closed = false

  constructor(
    private core: CoreApp,
    private registry: NodeRegistry,
    private options: SchedulerOptions,
  ) {
    registry.listener = this
    this.timer = setInterval(() => this.checkStalls(), 500)
    this.timer.unref()
  }

  /** Queues a request; answers its position in the queue (0: goes out first). */
  enqueue(item: WorkItem): number {
    const work: Work = {
      ...item,
      tried: new Set(),
      offers: 0,
      job: null,
      text: '',
      lastError: '',
      publisher: null,
      row: null,
      chain: Promise.resolve(),
    }
    this.queue.push(work)
    const position = this.queue.filter((w) => w.modelId === item.modelId).length - 1
    this.onCapacity()
    return position
  }

  /** Requests waiting plus running. */
  get load(): number {
    return this.queue.length + this.byJob.size
  }

  /** Requests waiting for a node. */
  get queued(): number {
    return this.queue.length
  }

  /** Jobs out on nodes. */
  get running(): number {
    return this.byJob.size
  }

  onCapacity(): void {
    void this.pump()
  }

  onNodeGone(nodeId: string): void {
    for (const work of [...this.byJob.values()]) {
      if (work.job?.nodeId === nodeId) this.reassign(work, 'The node went offline')
    }
    this.onCapacity()
  }

  onJobFrame(nodeId: string, frame: JobFrame): void {
    const work = this.byJob.get(frame.job_id)
    if (!work?.job || work.job.nodeId !== nodeId) return // a stale frame of a job given away
    const job = work.job
    job.lastActivity = Date.now()
    switch (frame.type) {
      case 'job_accepted':
        job.acked = true
        return this.serial(work, () => this.markProcessing(work, job.id, nodeId))
      case 'job_chunk':
        // An empty chunk changes nothing; publishing it would only delay the first real text.
        if (!frame.text) return
        work.text += frame.text
        work.publisher?.touch()
        return
      case 'job_rejected':
        if (frame.reason === NO_SLOT_REASON) return this.retryLater(work, nodeId)
        return this.reassign(work, frame.reason, false)
      case 'job_failed':
        return this.reassign(work, frame.error, false)
      case 'job_done':
        return this.complete(work, nodeId, frame)
    }
  }

  /** Resolves when nothing is queued or running (tests, shutdown). */
  idle(): Promise<void> {
    if (!this.load) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  close(): void {
    this.closed = true
    clearInterval(this.timer)
    for (const w of this.byJob.values()) w.publisher?.stop()
  }

  private async pump(): Promise<void> {
    if (this.closed) return
    if (this.pumping) {
      this.pumpAgain = true
      return
    }
    this.pumping = true
    try {
      do {
        this.pumpAgain = false
        for (const work of [...this.queue]) {
          const choice = await pickNode(
            this.core.database.db,
            this.registry,
            work.modelId,
            work.tried,
          )
          if (choice.node) {
            this.queue.splice(this.queue.indexOf(work), 1)
            await this.dispatch(work, choice.node.nodeId)
          } else if (!choice.anyEligible) {
            this.queue.splice(this.queue.indexOf(work), 1)
            this.fail(
              work,
              work.lastError ? `${NO_NODE_MESSAGE} (${work.lastError})` : NO_NODE_MESSAGE,
            )
          }
        }
      } while (this.pumpAgain)
    } catch (err) {
      console.error('scheduler pump failed', err)
    } finally {
      this.pumping = false
      this.checkIdle()
    }
  }

  private async dispatch(work: Work, nodeId: string): Promise<void> {
    const session = this.registry.get(nodeId)!
    const jobId = await createJob(this.core, work.requestId, nodeId)
    // The stored row is the base of partial events: known before the first chunk can arrive.
    work.row ??= await loadRequestRow(this.core, work.requestId)
    work.tried.add(nodeId)
    work.offers++
    work.job = { id: jobId, nodeId, acked: false, lastActivity: Date.now() }
    work.text = ''
    this.byJob.set(jobId, work)
    session.jobs.add(jobId)
    work.publisher = new CoalescedPublisher(this.options.streamIntervalMs, () =>
      this.publishPartial(work),
    )
    const sent = session.send({
      type: 'job_offer',
      job_id: jobId,
      request_id: work.requestId,
      model_id: work.modelId,
      prompt: work.prompt,
      sampling: work.sampling,
    })
    if (!sent) this.reassign(work, 'The node went offline')
  }

  private async markProcessing(work: Work, jobId: string, nodeId: string) {
    await setJobStatus(this.core, jobId, 'acked')
    if (work.job?.id !== jobId) return
    const row = await markProcessing(this.core, work.requestId, nodeId)
    if (!row || work.job?.id !== jobId) return
    work.row = row
    this.publishPartial(work)
  }

  /** The growing response goes out as an update event of the in-memory row: no database write. */
  private publishPartial(work: Work) {
    if (!work.row || !work.job) return
    const row: Row = {
      ...work.row,
      status: 'processing',
      node: work.job.nodeId,
      response: work.text,
      is_partial: 1,
    }
    this.core.events.emit({ action: 'update', collection: requireCollection('requests'), row })
  }

  private complete(work: Work, nodeId: string, frame: Extract<JobFrame, { type: 'job_done' }>) {
    const jobId = frame.job_id
    // The whole answer reaches subscribers now; the completed record follows the settlement.
    this.publishPartial(work)
    this.release(work)
    this.serial(work, async () => {
      await setJobStatus(this.core, jobId, 'completed')
      await settleAndPublish(this.core, {
        requestId: work.requestId,
        nodeId,
        response: work.text,
        // Input is the estimate the hold was sized from; output is capped by the hold.
        tokensInput: work.estimatedInput,
        tokensOutput: Math.min(frame.tokens_output, work.maxTokens),
        processingTimeMs: frame.processing_time_ms,
      })
    })
    this.onCapacity()
  }

  /**
   * The node was full after all (its own count differs from ours for a moment): the node may take
   * this request again once it has had a moment, unlike a node that dropped or failed it.
   */
  private retryLater(work: Work, nodeId: string) {
    const session = this.registry.get(nodeId)
    if (session) session.fullUntil = Date.now() + FULL_NODE_PAUSE_MS
    this.reassign(work, NO_SLOT_REASON, false)
    work.tried.delete(nodeId)
    setTimeout(() => this.onCapacity(), FULL_NODE_PAUSE_MS + 10).unref()
  }

  /** Takes the job away from its node and queues the request again, at the front. */
  private reassign(work: Work, reason: string, penalize = true) {
    const job = work.job
    if (!job) return
    this.release(work)
    work.lastError = reason
    const session = this.registry.get(job.nodeId)
    session?.send({ type: 'job_cancel', job_id: job.id })
    this.serial(work, async () => {
      await setJobStatus(this.core, job.id, 'failed')
      if (penalize) await penalizeNode(this.core.database.db, job.nodeId)
      if (work.row) {
        // Discard the partial text: the next node's answer replaces it.
        this.core.events.emit({
          action: 'update',
          collection: requireCollection('requests'),
          row: { ...work.row, status: 'pending', response: '', is_partial: 1 },
        })
      }
    })
    if (work.tried.size >= this.options.maxAttempts || work.offers >= MAX_OFFERS) {
      this.fail(work, `${NO_NODE_MESSAGE} (${reason})`)
      return
    }
    this.queue.unshift(work)
    this.onCapacity()
  }

  private release(work: Work) {
    if (!work.job) return
    this.byJob.delete(work.job.id)
    this.registry.get(work.job.nodeId)?.jobs.delete(work.job.id)
    work.publisher?.stop()
    work.publisher = null
    work.job = null
  }

  private fail(work: Work, message: string) {
    this.serial(work, () => failAndPublish(this.core, work.requestId, work.user, message))
  }

  private checkStalls() {
    const now = Date.now()
    for (const work of [...this.byJob.values()]) {
      const job = work.job
      if (!job) continue
      const limit = job.acked ? this.options.stallMs : this.options.offerTimeoutMs
      if (now - job.lastActivity > limit) this.reassign(work, 'The node stopped responding')
    }
  }

  /** Database work of one request runs in order (accepted before done, done before anything later). */
  private serial(work: Work, task: () => Promise<void>) {
    work.chain = work.chain
      .then(() => (this.closed ? undefined : task()))
      .catch((err) => {
        // Writes cut off by shutdown are expected; restart recovery deals with their requests.
        if (!this.closed) console.error('scheduler write failed', err)
      })
      .finally(() => this.checkIdle())
  }

  private checkIdle() {
    if (this.load || this.pumping) return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    waiters.forEach((w) => w())
  }
}
