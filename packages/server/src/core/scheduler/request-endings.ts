/**
 * @module How the scheduler ends a request so that a passing database fault cannot leave it open
 * with its hold: a failure is tried again with a growing pause, and a completed answer whose
 * settlement did not commit fails retryable instead. The single writes are in request-writes.ts.
 */
import type { CoreApp } from '../app.ts'
import type { Cancellation } from '../ledger/settlement.ts'
import type { MeteredAnswer } from '../metering/answer-meter.ts'
import type { NodeHealth } from '../nodes/node-health.ts'
import { log } from '../../tools/log.ts'
import {
  cancelAndPublish as cancelOnce,
  chargeDeletedAndPublish,
  failAndPublish as failOnce,
  setJobStatus,
  settleAndPublish,
} from './request-writes.ts'
import type { Work } from './work.ts'

/** What a user sees when the answer came but could not be saved (a database error). */
export const SAVE_FAILED_MESSAGE = 'The answer could not be saved. Please try again.'
/** Ending a request on a database error: tries, and the first and longest pause between them
 * (0.25 s doubling to 15 s: about a minute in all). */
const END_RETRIES = 8
const END_RETRY_MS = 250
const END_RETRY_MAX_MS = 15_000

/** Cores whose scheduler has closed (shutdown): their failed writes are not retried. */
const closedCores = new WeakSet<CoreApp>()

/** The core's scheduler has closed: failures under way stop retrying at their next error. */
export function stopRetrying(core: CoreApp): void {
  closedCores.add(core)
}

/**
 * Runs one of a request's end writes (request-writes.ts), retrying a database error with a growing
 * pause for about a minute, so a passing fault never leaves a request open with its hold; after
 * that, or once the scheduler has closed, restart recovery and the takeover of requests end it.
 */
async function retried<T>(
  core: CoreApp,
  requestId: string,
  what: string,
  write: () => Promise<T>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write()
    } catch (err) {
      if (closedCores.has(core) || attempt + 1 >= END_RETRIES) throw err
      log.error({ err, requestId }, `${what} failed, retrying`)
      await new Promise((r) =>
        setTimeout(r, Math.min(END_RETRY_MAX_MS, END_RETRY_MS * 2 ** attempt)).unref(),
      )
    }
  }
}

/** Fails a request retryable and publishes it, retried (above). */
export function failAndPublish(
  core: CoreApp,
  requestId: string,
  message: string,
  owner: string,
): Promise<void> {
  return retried(core, requestId, 'failing a request', () =>
    failOnce(core, requestId, message, owner),
  )
}

/**
 * Cancels a request (its user's Stop) and publishes it, retried (above). Given up on once, the
 * request stayed open under this process, and was then adopted as an orphan (takeover.ts) and run
 * after its user had stopped it.
 */
export function cancelAndPublish(core: CoreApp, c: Cancellation): Promise<boolean> {
  return retried(core, c.requestId, 'cancelling a request', () => cancelOnce(core, c))
}

/** A job its node finished, with the answer as the coordinator metered it. */
export interface FinishedJob {
  jobId: string
  nodeId: string
  answer: MeteredAnswer
  /** The node's own count of its output tokens (its claim, for its record). */
  claimedOutput: number
  /** From the acceptance to the end, as this process timed it. */
  elapsedMs: number
  /** The node's own figure. */
  processingTimeMs: number
}

/**
 * The end of a request whose node finished: the job and the node's success are recorded, then the
 * answer is settled (or, for a canary, handed to its check).
 */
export async function endCompleted(
  core: CoreApp,
  health: NodeHealth,
  work: Work,
  done: FinishedJob,
): Promise<void> {
  const { nodeId, answer } = done
  await setJobStatus(core, done.jobId, 'completed')
  // The node's record is secondary: a failed write of it must not keep the answer unsettled.
  await health
    .success(nodeId, work.modelId, answer, done.claimedOutput, done.elapsedMs)
    .catch((err: unknown) => log.error({ err }, 'recording a node success failed'))
  try {
    if (work.canary) return await work.canary.done(answer, done.processingTimeMs)
    const tokensOutput = answer.tokensOutput
    const outcome = await settleAndPublish(core, {
      requestId: work.requestId,
      nodeId,
      response: answer.text,
      // Input as counted when the hold was sized; output as the coordinator counted it.
      tokensInput: work.estimatedInput,
      tokensOutput,
      processingTimeMs: done.processingTimeMs,
      owner: core.processId,
    })
    // Deleted while its answer was being settled: the deletion released the hold, so the
    // answer the user saw is charged like any deleted request's streamed part.
    if (outcome === 'deleted') await chargeDeletedAndPublish(core, work, nodeId, tokensOutput)
  } catch (err) {
    // The settlement's transaction did not commit (a database error): the request must not
    // stay open with its hold. It fails retryable, nothing charged. When the settlement did
    // commit and only what followed failed, the request is no longer open and this changes
    // nothing.
    log.error({ err, requestId: work.requestId }, 'settling a request failed')
    await failAndPublish(core, work.requestId, SAVE_FAILED_MESSAGE, core.processId)
    await work.canary?.done(null, 0)
  }
}
