/**
 * @module Settlement of one inference request, exactly once: the request's final fields, the
 * user's debit, the node owner's credit, the hold's release, the conversation and the node, all in
 * one transaction. The guard is the request's status: only a pending or processing request can be
 * completed or failed, so a second settlement (retry, reconnect, duplicate frame) changes nothing.
 */
import { sql } from 'kysely'
import type { Db } from '../../db/database.ts'
import { nowDate } from '../../tools/dates.ts'
import { applyEntry } from './ledger-entry.ts'
import { releaseHold, requestCost } from './reservation.ts'

export interface Completion {
  requestId: string
  nodeId: string
  response: string
  tokensInput: number
  tokensOutput: number
  processingTimeMs: number
}

export interface SettledRequest {
  user: string
  nodeOwner: string
  conversation: string
  cost: number
}

/** Reputation moves by these steps, within [0, 10]: finished jobs earn, dropped jobs cost. */
export const REPUTATION_GAIN = 0.1
export const REPUTATION_LOSS = 0.5

/** Completes and pays for a request; null when it was already settled (nothing changed). */
export async function settleRequest(db: Db, c: Completion): Promise<SettledRequest | null> {
  return db.transaction().execute(async (trx) => {
    const request = await trx
      .selectFrom('requests as r')
      .innerJoin('models as m', 'm.id', 'r.model')
      .select(['r.user', 'r.conversation', 'r.reserved', 'm.credit_multiplier'])
      .where('r.id', '=', c.requestId)
      .executeTakeFirst()
    const node = await trx
      .selectFrom('nodes')
      .select(['user'])
      .where('id', '=', c.nodeId)
      .executeTakeFirst()
    if (!request || !node) return null
    const now = nowDate()
    const marked = await trx
      .updateTable('requests')
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
        updated: now,
      })
      .where('id', '=', c.requestId)
      .where('status', 'in', ['pending', 'processing'])
      .executeTakeFirst()
    if (Number(marked.numUpdatedRows) !== 1) return null

    const user = String(request.user)
    const reserved = Number(request.reserved ?? 0)
    // The cost can never exceed the hold: output is capped by the reservation's output cap.
    let cost = Math.min(
      requestCost(c.tokensInput, c.tokensOutput, Number(request.credit_multiplier ?? 1)),
      reserved,
    )
    await releaseHold(trx, user, reserved)
    // An admin debit during the job may have taken part of the held credits: never overdraw.
    const balance = await trx
      .selectFrom('user_balances')
      .select('balance')
      .where('user', '=', user)
      .executeTakeFirst()
    cost = Math.max(0, Math.min(cost, Number(balance?.balance ?? 0)))
    if (cost > 0) {
      await applyEntry(trx, {
        user,
        type: 'debit_inference_request',
        amount: cost,
        description: 'Spent on inference request',
        request: c.requestId,
      })
      await applyEntry(trx, {
        user: String(node.user),
        type: 'credit_inference_request',
        amount: cost,
        description: 'Earned from processing inference request',
        request: c.requestId,
      })
    }
    if (request.conversation) {
      await trx
        .updateTable('conversations')
        .set({
          message_count: sql`COALESCE(message_count, 0) + 1`,
          last_message_at: now,
          updated: now,
        })
        .where('id', '=', request.conversation)
        .execute()
    }
    await trx
      .updateTable('nodes')
      .set({
        total_requests: sql`COALESCE(total_requests, 0) + 1`,
        reputation_score: sql`CASE WHEN reputation_score + ${REPUTATION_GAIN} > 10 THEN 10 ELSE reputation_score + ${REPUTATION_GAIN} END`,
        updated: now,
      })
      .where('id', '=', c.nodeId)
      .execute()
    return {
      user,
      nodeOwner: String(node.user),
      conversation: String(request.conversation ?? ''),
      cost,
    }
  })
}

/** Fails a request and releases its whole hold; false when it had already ended. */
export async function failRequest(
  db: Db,
  requestId: string,
  errorMessage: string,
  canRetry: boolean,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const request = await trx
      .selectFrom('requests')
      .select(['user', 'reserved'])
      .where('id', '=', requestId)
      .executeTakeFirst()
    if (!request) return false
    const marked = await trx
      .updateTable('requests')
      .set({
        status: 'failed',
        error_message: errorMessage,
        can_retry: canRetry ? 1 : 0,
        is_partial: 0,
        response: '',
        reserved: 0,
        updated: nowDate(),
      })
      .where('id', '=', requestId)
      .where('status', 'in', ['pending', 'processing'])
      .executeTakeFirst()
    if (Number(marked.numUpdatedRows) !== 1) return false
    await releaseHold(trx, String(request.user), Number(request.reserved ?? 0))
    return true
  })
}

/** Lowers a node's reputation after it dropped or stalled a job. */
export async function penalizeNode(db: Db, nodeId: string): Promise<void> {
  await db
    .updateTable('nodes')
    .set({
      reputation_score: sql`CASE WHEN reputation_score - ${REPUTATION_LOSS} < 0 THEN 0 ELSE reputation_score - ${REPUTATION_LOSS} END`,
    })
    .where('id', '=', nodeId)
    .execute()
}
