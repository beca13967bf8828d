/**
 * @module The requests a scheduler has (queued, out on a node, being ended) and each one's
 * database work, run in order. A request leaves the books once its last write is done; the
 * scheduler is idle when none is queued or out on a node.
 */
import type { CoreApp } from '../app.ts'
import type { NodeRegistry } from '../nodes/node-registry.ts'
import { log } from '../../tools/log.ts'
import { failAndPublish } from './request-endings.ts'
import type { Job, Work } from './work.ts'

export class WorkBook {
  readonly queue: Work[] = []
  /** Requests out on nodes, by job id. */
  readonly byJob = new Map<string, Work>()
  /** Every request of this scheduler, queued, being offered, running or being settled. */
  readonly byRequest = new Map<string, Work>()
  /** Database writes still running (settlements, failures): a drained process waits for them. */
  private writes = new Set<Promise<void>>()
  private idleWaiters: Array<() => void> = []

  /** `closed`: the scheduler has closed (writes not begun are skipped); `pumping`: a pass over
   * the queue is under way (the scheduler is not idle). */
  constructor(
    private core: CoreApp,
    private registry: NodeRegistry,
    private closed: () => boolean,
    private pumping: () => boolean,
  ) {}

  /** Requests waiting plus running. */
  get load(): number {
    return this.queue.length + this.byJob.size
  }

  /** Takes the request out of the queue, if it is there. */
  unqueue(work: Work): void {
    const index = this.queue.indexOf(work)
    if (index >= 0) this.queue.splice(index, 1)
  }

  /** The request's job is no longer out: off the books and its node's count, nothing published. */
  release(work: Work): void {
    if (!work.job) return
    this.byJob.delete(work.job.id)
    this.registry.get(work.job.nodeId)?.jobs.delete(work.job.id)
    work.publisher?.stop()
    work.publisher = null
    work.job = null
  }

  /** Takes the job back (release) and tells its node to stop it; answers the job. */
  takeBack(work: Work): Job | null {
    const job = work.job
    this.release(work)
    if (job) this.registry.get(job.nodeId)?.send({ type: 'job_cancel', job_id: job.id })
    return job
  }

  /** Fails the request retryable (its hold released, nothing charged), unless it is ending. */
  fail(work: Work, message: string): void {
    if (work.ending) return
    work.ending = true
    this.end(work, async () => {
      await failAndPublish(this.core, work.requestId, message, this.core.processId)
      await work.canary?.done(null, 0)
    })
  }

  /** The request's last database work: once it is done, the scheduler no longer has it. */
  end(work: Work, task: () => Promise<void>): void {
    this.serial(work, async () => {
      try {
        await task()
      } finally {
        this.forget(work)
      }
    })
  }

  forget(work: Work): void {
    if (this.byRequest.get(work.requestId) === work) this.byRequest.delete(work.requestId)
  }

  /** Database work of one request runs in order (accepted before done, done before anything later). */
  serial(work: Work, task: () => Promise<void>): void {
    const chain: Promise<void> = work.chain
      .then(() => (this.closed() ? undefined : task()))
      .catch((err) => {
        // Writes cut off by shutdown are expected; restart recovery deals with their requests.
        if (!this.closed()) log.error({ err }, 'scheduler write failed')
      })
      .finally(() => {
        this.writes.delete(chain)
        this.checkIdle()
      })
    this.writes.add(chain)
    work.chain = chain
  }

  /** Resolves when nothing is queued or running (tests, shutdown). */
  idle(): Promise<void> {
    if (!this.load) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /** Resolves whoever waits for idle, when nothing is queued, running or being looked at. */
  checkIdle(): void {
    if (this.load || this.pumping()) return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    waiters.forEach((w) => w())
  }

  /** Resolves when the database writes begun so far (and those they lead to) are done. */
  async flushWrites(): Promise<void> {
    while (this.writes.size) await Promise.allSettled([...this.writes])
  }
}
