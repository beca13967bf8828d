/**
 * @module A node that answers an offer "full" (its own count of its slots differs from ours for a
 * moment) has not failed the request: the request may go back to it once it has had a moment, and
 * the answer costs it none of its offers. What bounds the wait is its unbroken run of such answers.
 */
import { FULL_RUN_GAP_MS, type Work } from './work.ts'

/**
 * Counts a "full" answer of `nodeId` (owned by `owner`) to the request's offer made at
 * `offeredAt`, its attempt already taken back; true when the request has been answered "full"
 * without a break for `stallMs` and must fail.
 */
export function noteFullAnswer(
  work: Work,
  nodeId: string,
  owner: string,
  offeredAt: number,
  stallMs: number,
): boolean {
  work.tried.delete(nodeId)
  work.triedOwners.delete(owner)
  // An offer answered "full" is not one of the request's offers: it waits for a node with room,
  // however often one says so. Counted, a node lying about its slots took every request waiting
  // for a busy honest node through its offers to a failure, and so did honest nodes busy with
  // other processes' jobs when scaled out. The node's pause (FULL_NODE_PAUSE_MS) bounds how often
  // it is asked.
  work.offers = work.canary ? 0 : Math.max(0, work.offers - 1)
  // Nor may "full" keep it waiting for ever: a node lying so, alone with the model, held the
  // request (and its hold) until its user gave up. Answered "full" without a break for as long
  // as a running job may stay silent, it fails retryable, nothing charged.
  const now = Date.now()
  const run = work.fullRun && offeredAt - work.fullRun.last <= FULL_RUN_GAP_MS ? work.fullRun : null
  work.fullRun = { since: run?.since ?? offeredAt, last: now }
  return !work.canary && now - work.fullRun.since >= stallMs
}
