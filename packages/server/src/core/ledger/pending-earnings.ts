/**
 * @module Pending earnings (issue 13, point 4; docs/verification.md). A node on probation has not
 * yet shown that it runs the model it claims, so what its owner earns is held: the user who asked
 * pays as usual (the debit is written at settlement), but the owner's credit waits in
 * `_pending_earnings` (one row per paid request, with a running total on the owner's balance and
 * on the node). When the node is verified (or trusted by the operator) the held amounts are paid to
 * the owner as ordinary `credit_inference_request` rows; when it fails a canary, or is deleted
 * before it was verified, each amount goes back to the user who paid it as a
 * `credit_inference_reversal` row on the same request. Either way every request's inference
 * transfer balances again (the audit counts rows still pending as the transfer's open side). A
 * payer whose account was deleted in the meantime cannot be paid back: that amount is forfeited
 * (recorded, paid to nobody; the closed account's rows already sum to zero). All in the caller's
 * unit of work (records/unit-of-work.ts); amounts are integer units.
 */
import { sql } from 'kysely'
import type { UnitOfWork } from '../records/unit-of-work.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'
import { applyEntry, ensureBalance } from './ledger-entry.ts'

/** The ledger row's description of a reversal after a failed canary. */
export const REVERSAL_REASON = 'the node that answered failed verification'

export type PendingStatus = 'pending' | 'released' | 'reversed' | 'forfeited'

export interface PendingEarning {
  requestId: string
  nodeId: string
  owner: string
  payer: string
  /** Units, > 0. */
  amount: number
}

/** Holds one request's earning for the node's owner (the payer's debit is the caller's). */
export async function holdEarning(uow: UnitOfWork, e: PendingEarning): Promise<void> {
  const now = nowDate()
  await uow.trx
    .insertInto('_pending_earnings')
    .values({
      id: newRecordId(),
      request: e.requestId,
      node: e.nodeId,
      owner: e.owner,
      payer: e.payer,
      amount: e.amount,
      status: 'pending',
      created: now,
      updated: now,
    })
    .execute()
  await ensureBalance(uow, e.owner)
  await addPending(uow, e.owner, e.nodeId, e.amount)
}

export interface Settled {
  /** Rows settled and their units. */
  count: number
  units: number
  /** Users whose balances changed (owner or payers). */
  users: string[]
}

/** The node was verified (or trusted): its owner is paid everything it held. */
export async function releasePendingEarnings(uow: UnitOfWork, nodeId: string): Promise<Settled> {
  return settleAll(uow, nodeId, async (row) => {
    await applyEntry(uow, {
      user: row.owner,
      type: 'credit_inference_request',
      amount: row.amount,
      description: 'Earned from processing inference request (released after verification)',
      request: row.request,
    })
    return { status: 'released', user: row.owner }
  })
}

/**
 * The node was caught (a failed canary) or is gone before it was verified: every held amount goes
 * back to the user who paid it, or is forfeited if that account no longer exists.
 */
export async function reversePendingEarnings(
  uow: UnitOfWork,
  nodeId: string,
  reason: string,
): Promise<Settled> {
  return settleAll(uow, nodeId, async (row) => {
    const payer = await uow.trx
      .selectFrom('users')
      .select('id')
      .where('id', '=', row.payer)
      .executeTakeFirst()
    if (!payer) return { status: 'forfeited', user: null }
    await applyEntry(uow, {
      user: row.payer,
      type: 'credit_inference_reversal',
      amount: row.amount,
      description: `Refunded: ${reason}`,
      request: row.request,
    })
    return { status: 'reversed', user: row.payer }
  })
}

interface PendingRow {
  id: string
  request: string
  owner: string
  payer: string
  amount: number
}

async function settleAll(
  uow: UnitOfWork,
  nodeId: string,
  settle: (row: PendingRow) => Promise<{ status: PendingStatus; user: string | null }>,
): Promise<Settled> {
  const trx = uow.trx
  const rows = await trx
    .selectFrom('_pending_earnings')
    .select(['id', 'request', 'owner', 'payer', 'amount'])
    .where('node', '=', nodeId)
    .where('status', '=', 'pending')
    .orderBy('created')
    .orderBy('id')
    .execute()
  const users = new Set<string>()
  let units = 0
  let count = 0
  const now = nowDate()
  for (const r of rows) {
    const row: PendingRow = {
      id: String(r.id),
      request: String(r.request),
      owner: String(r.owner),
      payer: String(r.payer),
      amount: Number(r.amount),
    }
    // Guarded on the status, so a row is never settled twice.
    const marked = await trx
      .updateTable('_pending_earnings')
      .set({ status: 'settling', updated: now })
      .where('id', '=', row.id)
      .where('status', '=', 'pending')
      .executeTakeFirst()
    if (Number(marked.numUpdatedRows) !== 1) continue
    const outcome = await settle(row)
    await trx
      .updateTable('_pending_earnings')
      .set({ status: outcome.status, updated: now })
      .where('id', '=', row.id)
      .execute()
    await addPending(uow, row.owner, nodeId, -row.amount)
    users.add(row.owner)
    if (outcome.user) users.add(outcome.user)
    units += row.amount
    count++
  }
  return { count, units, users: [...users] }
}

async function addPending(
  uow: UnitOfWork,
  owner: string,
  nodeId: string,
  delta: number,
): Promise<void> {
  const now = nowDate()
  await uow.update('user_balances', (q) =>
    q
      .set({ pending_earnings: sql`pending_earnings + ${delta}`, updated: now })
      .where('user', '=', owner),
  )
  await uow.update('nodes', (q) =>
    q.set({ pending_earnings: sql`pending_earnings + ${delta}` }).where('id', '=', nodeId),
  )
}
