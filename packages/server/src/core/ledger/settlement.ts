/**
 * @module Settlement of one inference request, exactly once: the request's final fields (with the
 * credits actually charged in `cost`), the user's debit, the node owner's credit, the hold's
 * release, the conversation and the node, all in the caller's unit of work (one transaction, its
 * rows published once it commits). The guard is the request's
 * status: only a pending or processing request can be completed, failed or cancelled, so a second
 * settlement (retry, reconnect, duplicate frame, deletion) changes nothing. And it is still the hold
 * that was read: on PostgreSQL the guarded UPDATE sees the row as it is when it runs, so a request
 * failed and retried since the read (open again, a new hold) is not ended with the old hold's
 * figure, which would leave the new hold held for ever. Amounts are units.
 */
import { OPEN_REQUEST_STATUSES } from '@meshwork/protocol'
import { sql } from 'kysely'
import type { Db } from '../../db/database.ts'
import type { UnitOfWork } from '../records/unit-of-work.ts'
import { nowDate } from '../../tools/dates.ts'
import { requestCostUnits } from './credits.ts'
import { applyEntry } from './ledger-entry.ts'
import { holdEarning } from './pending-earnings.ts'
import { releaseHold } from './reservation.ts'

export interface Completion {
  requestId: string
  nodeId: string
  response: string
  tokensInput: number
  tokensOutput: number
  processingTimeMs: number
  /**
   * The process that must still own the request (`requests.lease_owner`), when a scheduler
   * settles: a process whose lease lapsed (a pause, a partition from Redis) while a survivor took
   * its request over no longer settles it.
   */
  owner?: string
}

export interface SettledRequest {
  user: string
  nodeOwner: string
  conversation: string
  /** Units charged (0 when the requester's own node served it). */
  cost: number
}

/** Reputation moves by these steps, within [0, 10]: finished jobs earn, dropped jobs cost. */
export const REPUTATION_GAIN = 0.1
export const REPUTATION_LOSS = 0.5

export const OPEN_STATUSES = OPEN_REQUEST_STATUSES

/**
 * Self-dealing: the requester owns the node that served the request. Such a request is free (no
 * debit, no credit: the owner would only pay itself) and counts for nothing towards the node's
 * reputation or its request total, so an owner cannot farm either by chatting with its own node.
 * Every rule that pays or rewards a node for a request asks this one function.
 */
export function isSelfDealing(requester: string, nodeOwner: string): boolean {
  return requester !== '' && requester === nodeOwner
}

/** Completes and pays for a request; null when it was already settled (nothing changed). */
export async function settleRequest(
  uow: UnitOfWork,
  c: Completion,
): Promise<SettledRequest | null> {
  const request = await readPricedRequest(uow.trx, c.requestId)
  const node = await lockNode(uow.trx, c.nodeId)
  if (!request || !node) return null
  const now = nowDate()
  const marked = await uow.update('requests', (q) =>
    q
      .set({
        status: 'completed',
        response: c.response,
        is_partial: 0,
        tokens_input: c.tokensInput,
        tokens_output: c.tokensOutput,
        processing_time_ms: c.processingTimeMs,
        node: c.nodeId,
        error_message: '',
        can_retry: 0,
        reserved: 0,
        cost: 0,
        updated: now,
      })
      .where('id', '=', c.requestId)
      .where('status', 'in', OPEN_STATUSES)
      .where('reserved', '=', request.reserved)
      .$if(c.owner !== undefined, (w) => w.where('lease_owner', '=', c.owner!)),
  )
  if (marked.length !== 1) return null
  // An answer with no output (nothing streamed, or claimed as nothing) is free and earns nothing,
  // as a stopped one is: otherwise a node could be paid every prompt for running no model.
  const produced = c.tokensOutput > 0
  const settled = await chargeAnswer(uow, request, c, node, { free: !produced })
  await countMessage(uow, request.conversation, now)
  if (produced && !isSelfDealing(settled.user, settled.nodeOwner)) {
    await uow.update('nodes', (q) =>
      q
        .set({
          total_requests: sql`COALESCE(total_requests, 0) + 1`,
          reputation_score: sql`CASE WHEN reputation_score + ${REPUTATION_GAIN} > 10 THEN 10 ELSE reputation_score + ${REPUTATION_GAIN} END`,
          updated: now,
        })
        .where('id', '=', c.nodeId),
    )
  }
  return settled
}

/** The request with what pricing it needs; undefined when it does not exist. */
function readPricedRequest(trx: Db, requestId: string) {
  return trx
    .selectFrom('requests as r')
    .innerJoin('models as m', 'm.id', 'r.model')
    .select(['r.user', 'r.conversation', 'r.reserved', 'm.credit_multiplier'])
    .where('r.id', '=', requestId)
    .executeTakeFirst()
}

type PricedRequest = NonNullable<Awaited<ReturnType<typeof readPricedRequest>>>

/** What these counts cost, never more than any cap (the hold, what the user can spend) nor below 0. */
export function cappedCost(
  tokensInput: number,
  tokensOutput: number,
  multiplierUnits: number,
  ...caps: number[]
): number {
  return Math.max(
    0,
    Math.min(requestCostUnits(tokensInput, tokensOutput, multiplierUnits), ...caps),
  )
}

/**
 * Releases the request's hold and charges its answer (nothing when `free` or self-dealing), the
 * cost recorded on the request. Never more than the hold (output is capped by the reservation's
 * output cap) and never more than the balance (an admin debit during the job may have taken part
 * of the held credits).
 */
async function chargeAnswer(
  uow: UnitOfWork,
  request: PricedRequest,
  c: Pick<Completion, 'requestId' | 'nodeId' | 'tokensInput' | 'tokensOutput'>,
  node: LockedNode | null,
  { free }: { free: boolean },
): Promise<SettledRequest> {
  const user = String(request.user)
  const nodeOwner = node ? node.user : ''
  const reserved = Number(request.reserved ?? 0)
  const balance = await releaseHoldLocked(uow, user, reserved)
  const multiplier = Number(request.credit_multiplier ?? 0)
  const cost =
    free || isSelfDealing(user, nodeOwner)
      ? 0
      : cappedCost(c.tokensInput, c.tokensOutput, multiplier, reserved, balance)
  await payForRequest(uow, {
    requestId: c.requestId,
    nodeId: c.nodeId,
    held: node?.held ?? false,
    user,
    nodeOwner,
    cost,
  })
  if (cost > 0) await uow.update('requests', (q) => q.set({ cost }).where('id', '=', c.requestId))
  return { user, nodeOwner, conversation: String(request.conversation ?? ''), cost }
}

/** One more message in the request's conversation (none for a request made without one). */
async function countMessage(uow: UnitOfWork, conversation: unknown, now: string): Promise<void> {
  if (!conversation) return
  await uow.update('conversations', (q) =>
    q
      .set({
        message_count: sql`COALESCE(message_count, 0) + 1`,
        last_message_at: now,
        updated: now,
      })
      .where('id', '=', String(conversation)),
  )
}

/**
 * The user's debit and the node owner's credit for one request (nothing when cost is 0). A node on
 * probation earns nothing yet: its owner's credit is held as pending (pending-earnings.ts).
 */
export async function payForRequest(
  uow: UnitOfWork,
  p: {
    requestId: string
    nodeId: string
    /** The node is on probation: its owner's credit is held. */
    held: boolean
    user: string
    nodeOwner: string
    cost: number
  },
): Promise<void> {
  if (p.cost <= 0) return
  await applyEntry(uow, {
    user: p.user,
    type: 'debit_inference_request',
    amount: p.cost,
    description: 'Spent on inference request',
    request: p.requestId,
  })
  if (p.held) {
    await holdEarning(uow, {
      requestId: p.requestId,
      nodeId: p.nodeId,
      owner: p.nodeOwner,
      payer: p.user,
      amount: p.cost,
    })
    return
  }
  await applyEntry(uow, {
    user: p.nodeOwner,
    type: 'credit_inference_request',
    amount: p.cost,
    description: 'Earned from processing inference request',
    request: p.requestId,
  })
}

/**
 * The serving node's owner and whether its earnings are held, with the node's row locked until
 * commit: a canary verdict (which locks the node first, then balances) cannot graduate or fail the
 * node between this read and the payment, and both take their locks in the same order.
 */
interface LockedNode {
  user: string
  /** On probation: its owner's earnings are held. */
  held: boolean
}

export async function lockNode(trx: Db, nodeId: string): Promise<LockedNode | null> {
  const row = await trx
    .updateTable('nodes')
    .set({ updated: sql`updated` })
    .where('id', '=', nodeId)
    .returning(['user', 'verification'])
    .executeTakeFirst()
  return row ? { user: String(row.user), held: row.verification === 'probation' } : null
}

/** Releases a hold and answers the balance, with the balance row locked until commit. */
export async function releaseHoldLocked(
  uow: UnitOfWork,
  user: string,
  amount: number,
): Promise<number> {
  const [row] = await uow.update('user_balances', (q) =>
    q
      .set({ held: sql`CASE WHEN held - ${amount} < 0 THEN 0 ELSE held - ${amount} END` })
      .where('user', '=', user),
  )
  return Number(row?.balance ?? 0)
}

/**
 * Fails a request and releases its whole hold; false when it had already ended, or when `owner`
 * is given and another process owns the request now (Completion's `owner`).
 */
export function failRequest(
  uow: UnitOfWork,
  requestId: string,
  errorMessage: string,
  canRetry: boolean,
  owner?: string,
): Promise<boolean> {
  return endReleasingHold(
    uow,
    requestId,
    { status: 'failed', error_message: errorMessage, can_retry: canRetry ? 1 : 0, response: '' },
    owner,
  )
}

/** Ends an open request with nothing to pay, releasing its whole hold; false when already ended. */
async function endReleasingHold(
  uow: UnitOfWork,
  requestId: string,
  end: RequestEnd,
  owner?: string,
): Promise<boolean> {
  const ended = await endRequest(uow, requestId, end, owner)
  if (!ended) return false
  await releaseHold(uow, ended.user, ended.reserved)
  return true
}

/** How an open request ends with nothing to pay: its status and the fields that go with it. */
interface RequestEnd {
  status: 'failed' | 'cancelled'
  error_message?: string
  can_retry?: number
  response?: string
}

/**
 * Marks an open request ended (its reserve 0) and answers its user and the hold it had, which the
 * caller releases or keeps; null when it had already ended (or, with `owner`, is another
 * process's now). The hold is left as it is.
 */
export async function endRequest(
  uow: UnitOfWork,
  requestId: string,
  end: RequestEnd,
  owner?: string,
): Promise<{ user: string; reserved: number; status: string } | null> {
  const request = await uow.trx
    .selectFrom('requests')
    .select(['user', 'reserved', 'status'])
    .where('id', '=', requestId)
    .executeTakeFirst()
  if (!request) return null
  const marked = await uow.update('requests', (q) =>
    q
      .set({ ...end, reserved: 0, is_partial: 0, updated: nowDate() })
      .where('id', '=', requestId)
      .where('status', 'in', OPEN_STATUSES)
      .where('reserved', '=', request.reserved)
      .$if(owner !== undefined, (w) => w.where('lease_owner', '=', owner!)),
  )
  if (marked.length !== 1) return null
  return {
    user: String(request.user),
    reserved: Number(request.reserved ?? 0),
    status: String(request.status),
  }
}

export interface Cancellation {
  requestId: string
  /** The node that was writing the answer; empty when it was still queued. */
  nodeId: string
  /** The text produced so far (kept on the request). */
  response: string
  tokensInput: number
  tokensOutput: number
  processingTimeMs: number
}

/** The cancellation of a request with nothing streamed (still queued, or stopped by no node). */
export function cancellationOfNothing(requestId: string): Cancellation {
  return {
    requestId,
    nodeId: '',
    response: '',
    tokensInput: 0,
    tokensOutput: 0,
    processingTimeMs: 0,
  }
}

/**
 * Ends an open request its owner stopped (`POST /api/requests/cancel`, or a `/v1` client that went
 * away): `cancelled` with the text produced so far, its hold released, and what was produced paid
 * for exactly as a completion is (`(input + output) x multiplier`, the same ledger rows, capped by
 * the hold and the balance) in one transaction. Nothing is charged when no output was produced (a
 * queued request, or a node that had not written yet), nor for self-dealing. The node's reputation
 * and request total do not move (the node did nothing wrong, and finished nothing). Null when the
 * request had already ended (nothing changed).
 */
export async function cancelRequest(
  uow: UnitOfWork,
  c: Cancellation,
): Promise<SettledRequest | null> {
  const request = await readPricedRequest(uow.trx, c.requestId)
  if (!request) return null
  // Locked first, like settlement: a canary verdict cannot cross the payment.
  const node = c.nodeId ? await lockNode(uow.trx, c.nodeId) : null
  const produced = Boolean(node) && c.tokensOutput > 0
  const now = nowDate()
  const marked = await uow.update('requests', (q) =>
    q
      .set({
        status: 'cancelled',
        response: produced ? c.response : '',
        is_partial: 0,
        tokens_input: produced ? c.tokensInput : 0,
        tokens_output: produced ? c.tokensOutput : 0,
        processing_time_ms: produced ? c.processingTimeMs : 0,
        ...(node ? { node: c.nodeId } : {}),
        error_message: '',
        can_retry: 0,
        reserved: 0,
        cost: 0,
        updated: now,
      })
      .where('id', '=', c.requestId)
      .where('status', 'in', OPEN_STATUSES)
      .where('reserved', '=', request.reserved),
  )
  if (marked.length !== 1) return null
  const settled = await chargeAnswer(uow, request, c, node, { free: !produced })
  // A stopped answer with text is a message of its conversation, like a completed one.
  if (produced) await countMessage(uow, request.conversation, now)
  return settled
}

/** Lowers a node's reputation after it dropped or stalled a job (`jobs` of them at once). */
export async function penalizeNode(uow: UnitOfWork, nodeId: string, jobs = 1): Promise<void> {
  const loss = REPUTATION_LOSS * jobs
  await uow.update('nodes', (q) =>
    q
      .set({
        reputation_score: sql`CASE WHEN reputation_score - ${loss} < 0 THEN 0 ELSE reputation_score - ${loss} END`,
      })
      .where('id', '=', nodeId),
  )
}
