/**
 * @module A request deleted with its conversation or account while it was open. The deletion ends
 * it in its own transaction; the scheduler holding it charges the part its node had streamed
 * afterwards (after the record event's trip, over Redis when scaled out). A request that had a job
 * out keeps its hold until then: the hold moves from the request to the server-only
 * `_deletion_holds` (one row per request, `held` unchanged), so the user cannot spend the credits
 * the streamed part will cost between the deletion and its charge. The charge takes at most that
 * hold and releases all of it; the hold sweep (hold-sweep.ts) releases, uncharged, a hold whose
 * charge never came. A queued request (no job out) releases its hold at once: nothing was
 * streamed. Amounts are units.
 */
import type { Db } from '../../db/database.ts'
import type { UnitOfWork } from '../records/unit-of-work.ts'
import { nowDate } from '../../tools/dates.ts'
import { releaseHold } from './reservation.ts'
import {
  cappedCost,
  endRequest,
  isSelfDealing,
  lockNode,
  payForRequest,
  releaseHoldLocked,
  type SettledRequest,
} from './settlement.ts'

/** The server-only table of holds awaiting a deleted request's charge (migration 0100). */
export const DELETION_HOLDS = '_deletion_holds'

/** A node_jobs row in these statuses is a job still out on its node. */
const LIVE_JOB_STATUSES = ['pending', 'acked']

/**
 * Ends an open request that is about to be deleted (its conversation or account is going), inside
 * the deleting transaction: `cancelled`, its reserve 0. A request that had a job out keeps its hold
 * for the charge of its streamed part (`_deletion_holds`); one still queued, or any when
 * `keepHold` is false (the account itself is closing), releases it. False when it had already
 * ended. The scheduler then cancels the node's job and charges what was streamed.
 */
export async function endDeletedRequest(
  uow: UnitOfWork,
  requestId: string,
  { keepHold = true }: { keepHold?: boolean } = {},
): Promise<boolean> {
  const ended = await endRequest(uow, requestId, { status: 'cancelled' })
  if (!ended) return false
  if (keepHold && ended.reserved > 0 && (await hadJobOut(uow.trx, requestId, ended.status))) {
    const now = nowDate()
    await uow.trx
      .insertInto(DELETION_HOLDS)
      .values({ id: requestId, user: ended.user, amount: ended.reserved, created: now })
      .execute()
    return true
  }
  await releaseHold(uow, ended.user, ended.reserved)
  return true
}

/**
 * The request was running on a node, or may be: accepted (`processing`), or a job row still out
 * (offered, not yet accepted). Text can only have streamed for such a request.
 */
async function hadJobOut(trx: Db, requestId: string, status: string): Promise<boolean> {
  if (status === 'processing') return true
  const job = await trx
    .selectFrom('node_jobs')
    .select('id')
    .where('request', '=', requestId)
    .where('status', 'in', LIVE_JOB_STATUSES)
    .executeTakeFirst()
  return Boolean(job)
}

export interface StreamedCharge {
  requestId: string
  user: string
  /** The node that was writing the answer; empty when it had none. */
  nodeId: string
  tokensInput: number
  /** What the coordinator counted of the part streamed (0: nothing to pay, the hold released). */
  tokensOutput: number
  multiplierUnits: number
  /** The request's hold: the charge never exceeds it. */
  reservedUnits: number
}

/**
 * Charges for the part of an answer a node had streamed before the user deleted the request, in
 * one transaction: the hold the deletion kept is taken (a guarded DELETE ... RETURNING, so of two
 * processes exactly one has it), the streamed part charged from it (at most that hold and the
 * balance) and the whole hold released. Nothing for self-dealing or for nothing streamed (the hold
 * is released all the same). Without a kept hold (the deletion found no job out, the sweep
 * released it, the account is gone) the charge is at most what is free beside other holds, and
 * never twice: a request already charged is left alone (checked under the balance row's lock).
 * The request row is gone; the ledger rows keep its id. Null when nothing was charged.
 */
export async function chargeDeletedRequest(
  uow: UnitOfWork,
  s: StreamedCharge,
): Promise<SettledRequest | null> {
  const trx = uow.trx
  // The node first, then the balance, as settlement and canary verdicts lock them.
  const node = s.nodeId ? await lockNode(trx, s.nodeId) : null
  const hold = await trx
    .deleteFrom(DELETION_HOLDS)
    .where('id', '=', s.requestId)
    .returning(['user', 'amount'])
    .executeTakeFirst()
  const payable = node !== null && s.tokensOutput > 0 && !isSelfDealing(s.user, node.user)
  let cost = 0
  if (hold) {
    const held = Number(hold.amount)
    const balance = await releaseHoldLocked(uow, String(hold.user), held)
    if (payable) cost = cappedCost(s.tokensInput, s.tokensOutput, s.multiplierUnits, held, balance)
  } else if (payable) {
    cost = await freeToCharge(uow, s)
  }
  if (!node || cost <= 0) return null
  await payForRequest(uow, {
    requestId: s.requestId,
    nodeId: s.nodeId,
    held: node.held,
    user: s.user,
    nodeOwner: node.user,
    cost,
  })
  return { user: s.user, nodeOwner: node.user, conversation: '', cost }
}

/**
 * What a deleted request without a kept hold may still be charged: at most what is free beside the
 * user's other holds and its old hold, 0 when it was charged already or the account is gone.
 */
async function freeToCharge(uow: UnitOfWork, s: StreamedCharge): Promise<number> {
  const [row] = await uow.update('user_balances', (q) =>
    q.set({ updated: nowDate() }).where('user', '=', s.user),
  )
  if (!row) return 0
  const charged = await uow.trx
    .selectFrom('user_credit_txs')
    .select('id')
    .where('request', '=', s.requestId)
    .where('type', '=', 'debit_inference_request')
    .executeTakeFirst()
  if (charged) return 0
  const free = Number(row.balance) - Number(row.held)
  return cappedCost(s.tokensInput, s.tokensOutput, s.multiplierUnits, s.reservedUnits, free)
}

/**
 * Releases, uncharged, every hold still awaiting a deleted request's charge of `user`, whose
 * account is closing (the closing row then takes the whole balance; a deleted account is not
 * charged). Answers the units released.
 */
export async function releaseDeletionHoldsOf(uow: UnitOfWork, user: string): Promise<number> {
  const rows = await uow.trx
    .deleteFrom(DELETION_HOLDS)
    .where('user', '=', user)
    .returning('amount')
    .execute()
  const total = rows.reduce((sum, r) => sum + Number(r.amount), 0)
  if (total > 0) await releaseHold(uow, user, total)
  return total
}
