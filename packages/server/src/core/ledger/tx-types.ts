/**
 * @module The ledger's transaction types and what each one means, in one table: which way it moves
 * the balance, which running total it feeds, and whether it is one side of a transfer between two
 * users. `applyEntry`, the records schema (the `type` select) and the audit all read this table, so
 * a new kind of movement (such as reversals of a caught node's earnings) is one new row here.
 */

export interface TxTypeRule {
  /** +1 adds the amount to the balance, -1 takes it. */
  sign: 1 | -1
  /** Feeds `user_balances.total_earned` (+1 adds, -1 takes back). */
  earned?: 1 | -1
  /** Feeds `user_balances.total_spent`. */
  spent?: 1 | -1
  /**
   * One side of a transfer between users: for every request, the credits of a transfer group sum
   * to its debits (the audit checks it). Types without a group create or destroy credits (admin
   * grants and debits, closing a deleted account) and are checked only against balances.
   */
  transfer?: string
}

export const txTypes = {
  credit_admin: { sign: 1 },
  debit_admin: { sign: -1 },
  credit_inference_request: { sign: 1, earned: 1, transfer: 'inference' },
  debit_inference_request: { sign: -1, spent: 1, transfer: 'inference' },
  /**
   * A paid answer returned to the user who paid it: its node was caught returning wrong answers
   * while its earnings were still pending (pending-earnings.ts). The credit side of the request's
   * transfer, in place of the owner's earning that never happened; it lowers what the user spent.
   */
  credit_inference_reversal: { sign: 1, spent: -1, transfer: 'inference' },
  /** What a deleted account still held: the account's rows then sum to zero (never lost). */
  debit_account_closed: { sign: -1 },
} as const satisfies Record<string, TxTypeRule>

export type TxType = keyof typeof txTypes

export const txTypeNames = Object.keys(txTypes) as TxType[]

export function txRule(type: TxType): TxTypeRule {
  return txTypes[type]
}
