/**
 * @module The credit ledger's one primitive: a signed movement on a user's balance, written as a
 * `user_credit_txs` row in the same transaction as the `user_balances` change, so credits are never
 * created or lost. Callers pass their unit of work (records/unit-of-work.ts), which publishes both
rows once it commits. Amounts are integer units (thousandths of a
 * credit, see credits.ts); what a type does is in tx-types.ts.
 */
import { sql } from 'kysely'
import type { UnitOfWork } from '../records/unit-of-work.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'
import { assertUnits, fromUnits } from './credits.ts'
import { txRule, type TxType } from './tx-types.ts'

export type { TxType } from './tx-types.ts'

export interface LedgerEntry {
  user: string
  type: TxType
  /** Integer units (thousandths of a credit), >= 0; the type says which way it moves. */
  amount: number
  description: string
  request?: string
}

export class InsufficientCreditsError extends Error {
  constructor(
    /** Units. */
    readonly available: number,
    /** Units. */
    readonly needed: number,
  ) {
    super(`Insufficient credits: ${fromUnits(available)} available, ${fromUnits(needed)} needed`)
    this.name = 'InsufficientCreditsError'
  }
}

/** Makes sure the user has a balance row (zeros) and returns it. */
export async function ensureBalance(uow: UnitOfWork, user: string) {
  const existing = await uow.trx
    .selectFrom('user_balances')
    .selectAll()
    .where('user', '=', user)
    .executeTakeFirst()
  if (existing) return existing
  const now = nowDate()
  const row = {
    id: newRecordId(),
    user,
    balance: 0,
    held: 0,
    total_earned: 0,
    total_spent: 0,
    created: now,
    updated: now,
  }
  return uow.insert('user_balances', row)
}

/** Applies one entry: balance row and transaction row together. Debits may not overdraw. */
export async function applyEntry(
  uow: UnitOfWork,
  entry: LedgerEntry,
): Promise<{ txId: string; balanceAfter: number }> {
  assertUnits(entry.amount)
  if (entry.amount < 0)
    throw new RangeError('Ledger amounts are >= 0; the type gives the direction')
  await ensureBalance(uow, entry.user)
  const rule = txRule(entry.type)
  const delta = rule.sign * entry.amount
  const now = nowDate()
  // One guarded UPDATE: atomic on both dialects, so concurrent debits can never overdraw.
  const [updated] = await uow.update('user_balances', (q) => {
    const update = q
      .set({
        balance: sql`balance + ${delta}`,
        total_earned: sql`total_earned + ${(rule.earned ?? 0) * entry.amount}`,
        total_spent: sql`total_spent + ${(rule.spent ?? 0) * entry.amount}`,
        updated: now,
      })
      .where('user', '=', entry.user)
    if (delta >= 0) return update
    const spendable = rule.sparesHolds ? sql`balance - held` : sql`balance`
    return update.where(sql<boolean>`${spendable} + ${delta} >= 0`)
  })
  if (!updated) {
    const current = await uow.trx
      .selectFrom('user_balances')
      .select(['balance', 'held'])
      .where('user', '=', entry.user)
      .executeTakeFirst()
    const spendable =
      Number(current?.balance ?? 0) - (rule.sparesHolds ? Number(current?.held ?? 0) : 0)
    throw new InsufficientCreditsError(spendable, entry.amount)
  }
  const after = Number(updated.balance)
  const txId = newRecordId()
  await uow.insert('user_credit_txs', {
    id: txId,
    user: entry.user,
    type: entry.type,
    amount: entry.amount,
    balance_after: after,
    request: entry.request ?? '',
    description: entry.description,
    created: now,
    updated: now,
  })
  return { txId, balanceAfter: after }
}
