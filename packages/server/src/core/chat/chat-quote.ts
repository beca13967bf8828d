/**
 * @module The most a message can cost, before it is sent: the same prompt building and the same
 * reservation sizing as a send, read-only (nothing is held).
 */
import type { Db } from '../../db/database.ts'
import { ApiError } from '../../tools/api-error.ts'
import { fromUnits, requestCostUnits } from '../ledger/credits.ts'
import { sizeReservation } from '../ledger/reservation.ts'
import { buildPrompt } from './build-prompt.ts'
import { conversationHistory, ownConversation } from './chat-records.ts'

/** What the composer shows before sending (POST /api/chat/quote); amounts in credits, as the
 * records API shows them. */
export interface QuoteAnswer {
  /** Credits the user can spend now (balance minus holds). */
  available: number
  estimated_input: number
  /** The most this message can cost: the hold a send would take; null when it cannot be paid. */
  max_cost: number | null
  /** Output tokens that hold pays for (0 when it cannot be paid). */
  output_cap: number
  /** Output tokens an answer may have when the balance is no limit: below it, a shorter answer. */
  max_output: number
  /** The least a send needs to be accepted. */
  min_cost: number
}

export interface QuoteLimits {
  contextLength: number
  maxOutput: number
  minOutput: number
  /** Input tokens of the prompt's messages, counted as a send counts them. */
  count?: (contents: string[]) => Promise<number>
}

export async function quoteMessage(
  db: Db,
  user: string,
  input: { conversation_id: string; model_id: string; prompt: string },
  limits: QuoteLimits,
): Promise<QuoteAnswer> {
  const history = input.conversation_id
    ? await conversationHistory(
        db,
        String((await ownConversation(db, user, input.conversation_id)).id),
        undefined,
        limits.contextLength,
      )
    : []
  const model = await db
    .selectFrom('models')
    .select('credit_multiplier')
    .where('id', '=', input.model_id)
    .executeTakeFirst()
  if (!model) throw new ApiError(404, "The requested resource wasn't found.")
  const multiplierUnits = Number(model.credit_multiplier ?? 0)
  const built = await buildPrompt(
    history,
    input.prompt,
    limits.contextLength,
    limits.maxOutput,
    limits.count,
  )
  const balance = await db
    .selectFrom('user_balances')
    .select(['balance', 'held'])
    .where('user', '=', user)
    .executeTakeFirst()
  const availableUnits = balance ? Number(balance.balance) - Number(balance.held) : 0
  const reservation = sizeReservation(
    {
      user,
      estimatedInput: built.estimatedInput,
      maxOutput: limits.maxOutput,
      minOutput: limits.minOutput,
      multiplierUnits,
    },
    availableUnits,
  )
  return {
    available: fromUnits(availableUnits),
    estimated_input: built.estimatedInput,
    max_cost: reservation ? fromUnits(reservation.amount) : null,
    output_cap: reservation?.outputCap ?? 0,
    max_output: limits.maxOutput,
    min_cost: fromUnits(requestCostUnits(built.estimatedInput, limits.minOutput, multiplierUnits)),
  }
}
