/**
 * @module Credit reservations: a send holds the most its request can cost, settlement and failure
 * release it. Holds live in `user_balances.held`; what a user may still spend is `balance - held`.
 * Every amount here is integer units (credits.ts), so sizing and holding are exact.
 */
import { sql } from 'kysely'
import type { UnitOfWork } from '../records/unit-of-work.ts'
import { nowDate } from '../../tools/dates.ts'
import {
  assertUnits,
  formatCreditsCeil,
  formatCreditsLikeFooter,
  requestCostUnits,
} from './credits.ts'
import { ensureBalance } from './ledger-entry.ts'

export interface ReservationInput {
  user: string
  /** Estimated input tokens of the prompt sent to the node. */
  estimatedInput: number
  /** Output tokens the request would like to generate at most. */
  maxOutput: number
  /** Fewer output tokens than this are not worth running: the send is refused instead. */
  minOutput: number
  /** The model's multiplier in units (thousandths). */
  multiplierUnits: number
  /** At most this many units may be held, whatever the balance (an API key's spending limit). */
  cap?: number
}

export interface Reservation {
  /** Units held. */
  amount: number
  /** The output cap the hold pays for (sent to the node as max_tokens). */
  outputCap: number
}

/** The balance cannot pay even the smallest useful reservation. */
export class InsufficientBalanceError extends Error {
  constructor(
    /** Units the user may spend (balance - held). */
    readonly available: number,
    /** Units the smallest useful request costs. */
    readonly needed: number,
    /** Units held for the user's requests in progress. */
    readonly held = 0,
  ) {
    super(insufficientMessage(available, needed, held))
    this.name = 'InsufficientBalanceError'
  }
}

/**
 * "Insufficient credits: 447 available, at least 516 needed": available rounded as the chat
 * footer rounds a balance, needed rounded up (it is a minimum). Should both round to the same
 * number, exact figures are shown instead, so the message never contradicts itself.
 */
function insufficientMessage(available: number, needed: number, held: number): string {
  let have = formatCreditsLikeFooter(available)
  let need = formatCreditsCeil(needed)
  if (have === need) {
    have = String(available / 1000)
    need = String(needed / 1000)
  }
  const inProgress =
    held > 0 ? ` (${formatCreditsLikeFooter(held)} held for answers in progress)` : ''
  return `Insufficient credits: ${have} available${inProgress}, at least ${need} needed`
}

/** Sizes the reservation from what is available: the output cap shrinks to what can be paid. */
export function sizeReservation(input: ReservationInput, available: number): Reservation | null {
  const m = input.multiplierUnits
  const affordableOutput =
    m > 0 ? Math.floor(available / m) - input.estimatedInput : input.maxOutput
  const outputCap = Math.min(input.maxOutput, affordableOutput)
  if (outputCap < input.minOutput) return null
  return { amount: requestCostUnits(input.estimatedInput, outputCap, m), outputCap }
}

/**
 * Holds credits for one request. Each attempt is one guarded UPDATE (`balance - held >= amount`),
 * atomic on both dialects, so concurrent sends can never hold more than the balance.
 */
export async function holdCredits(uow: UnitOfWork, input: ReservationInput): Promise<Reservation> {
  assertUnits(input.multiplierUnits, 'multiplier')
  await ensureBalance(uow, input.user)
  for (let attempt = 0; ; attempt++) {
    const row = await uow.trx
      .selectFrom('user_balances')
      .select(['balance', 'held'])
      .where('user', '=', input.user)
      .executeTakeFirstOrThrow()
    const held = Number(row.held)
    const available = Math.min(Number(row.balance) - held, input.cap ?? Infinity)
    const reservation = sizeReservation(input, available)
    if (!reservation) {
      const needed = requestCostUnits(input.estimatedInput, input.minOutput, input.multiplierUnits)
      throw new InsufficientBalanceError(available, needed, held)
    }
    const updated = await uow.update('user_balances', (q) =>
      q
        .set({ held: sql`held + ${reservation.amount}`, updated: nowDate() })
        .where('user', '=', input.user)
        .where(sql<boolean>`balance - held >= ${reservation.amount}`),
    )
    if (updated.length === 1) return reservation
    // Another send took credits between the read and the update: size again from the new figure.
    if (attempt >= 20) throw new InsufficientBalanceError(available, reservation.amount, held)
  }
}

/** Releases (part of) a hold in units; never below zero. */
export async function releaseHold(uow: UnitOfWork, user: string, amount: number): Promise<void> {
  assertUnits(amount)
  if (!(amount > 0)) return
  await uow.update('user_balances', (q) =>
    q
      .set({
        held: sql`CASE WHEN held - ${amount} < 0 THEN 0 ELSE held - ${amount} END`,
        updated: nowDate(),
      })
      .where('user', '=', user),
  )
}
