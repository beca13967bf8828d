/**
 * @module Credit reservations: a send holds the most its request can cost, settlement and failure
 * release it. Holds live in `user_balances.held`; what a user may still spend is `balance - held`.
 */
import { sql } from 'kysely'
import type { Db } from '../../db/database.ts'
import { nowDate } from '../../tools/dates.ts'
import { ensureBalance } from './ledger-entry.ts'

export interface ReservationInput {
  user: string
  /** Estimated input tokens of the prompt sent to the node. */
  estimatedInput: number
  /** Output tokens the request would like to generate at most. */
  maxOutput: number
  /** Fewer output tokens than this are not worth running: the send is refused instead. */
  minOutput: number
  multiplier: number
}

export interface Reservation {
  /** Credits held. */
  amount: number
  /** The output cap the hold pays for (sent to the node as max_tokens). */
  outputCap: number
}

/** The balance cannot pay even the smallest useful reservation. */
export class InsufficientBalanceError extends Error {
  constructor(
    readonly available: number,
    readonly needed: number,
  ) {
    super(
      `Insufficient credits: ${formatCredits(available)} available, at least ${formatCredits(needed)} needed`,
    )
    this.name = 'InsufficientBalanceError'
  }
}

const formatCredits = (n: number) => String(Math.round(n * 100) / 100)

/** Cost of a request in credits. */
export function requestCost(tokensInput: number, tokensOutput: number, multiplier: number): number {
  return (tokensInput + tokensOutput) * multiplier
}

/** Sizes the reservation from what is available: the output cap shrinks to what can be paid. */
export function sizeReservation(input: ReservationInput, available: number): Reservation | null {
  const m = input.multiplier
  const affordableOutput =
    m > 0 ? Math.floor(available / m) - input.estimatedInput : input.maxOutput
  const outputCap = Math.min(input.maxOutput, affordableOutput)
  if (outputCap < input.minOutput) return null
  return { amount: requestCost(input.estimatedInput, outputCap, m), outputCap }
}

/**
 * Holds credits for one request. Each attempt is one guarded UPDATE (`balance - held >= amount`),
 * atomic on both dialects, so concurrent sends can never hold more than the balance.
 */
export async function holdCredits(db: Db, input: ReservationInput): Promise<Reservation> {
  await ensureBalance(db, input.user)
  for (let attempt = 0; ; attempt++) {
    const row = await db
      .selectFrom('user_balances')
      .select(['balance', 'held'])
      .where('user', '=', input.user)
      .executeTakeFirstOrThrow()
    const available = Number(row.balance) - Number(row.held)
    const reservation = sizeReservation(input, available)
    if (!reservation) {
      throw new InsufficientBalanceError(
        available,
        requestCost(input.estimatedInput, input.minOutput, input.multiplier),
      )
    }
    const updated = await db
      .updateTable('user_balances')
      .set({ held: sql`held + ${reservation.amount}`, updated: nowDate() })
      .where('user', '=', input.user)
      .where(sql<boolean>`balance - held >= ${reservation.amount}`)
      .executeTakeFirst()
    if (Number(updated.numUpdatedRows) === 1) return reservation
    // Another send took credits between the read and the update: size again from the new figure.
    if (attempt >= 20) throw new InsufficientBalanceError(available, reservation.amount)
  }
}

/** Releases (part of) a hold; never below zero. */
export async function releaseHold(db: Db, user: string, amount: number): Promise<void> {
  if (!(amount > 0)) return
  await db
    .updateTable('user_balances')
    .set({
      held: sql`CASE WHEN held - ${amount} < 0 THEN 0 ELSE held - ${amount} END`,
      updated: nowDate(),
    })
    .where('user', '=', user)
    .execute()
}
