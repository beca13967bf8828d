/** @module How a credit transaction is shown (spec §9): label, description, sign and colour. */
import type { CreditTxRecord, ModelRecord } from '@meshwork/protocol/records'

/** A `user_credit_txs` record, its request (and the request's model and key) expanded. */
export type TransactionRecord = Pick<
  CreditTxRecord,
  'id' | 'user' | 'type' | 'amount' | 'created'
> &
  Partial<Pick<CreditTxRecord, 'request'>> & {
    expand?: {
      request?: {
        id: string
        model?: string
        expand?: {
          model?: Partial<Pick<ModelRecord, 'name' | 'display_name'>>
          api_key?: { name?: string }
        }
      }
    }
  }

const LABELS: Record<string, string> = {
  credit_admin: 'Admin Credit',
  debit_admin: 'Admin Debit',
  credit_inference_request: 'Inference Credit',
  debit_inference_request: 'Inference Debit',
  credit_inference_reversal: 'Inference Refund',
}

/** The type label, or the raw type for kinds the interface does not name. */
export function transactionLabel(type: string): string {
  return LABELS[type] ?? type
}

/** Credits add to the balance; every other kind takes away. */
export function isCredit(type: string): boolean {
  return type.startsWith('credit')
}

function modelName(tx: TransactionRecord): string {
  const model = tx.expand?.request?.expand?.model
  return model?.display_name || model?.name || ''
}

/** The description column: fixed text per type, plus the model for inference entries. */
export function transactionDescription(tx: TransactionRecord): string {
  const withModel = (text: string) => {
    const model = modelName(tx)
    return model ? `${text} (${model})` : text
  }
  // A request made through an API key is marked with the key's name (issue 10).
  const withKey = (text: string) => {
    const key = tx.expand?.request?.expand?.api_key?.name
    return key ? `${text} via API key “${key}”` : text
  }
  switch (tx.type) {
    case 'credit_admin':
      return 'Initial credits or admin credit'
    case 'debit_admin':
      return 'Admin debit'
    case 'credit_inference_request':
      return withModel('Earned from processing inference request')
    case 'credit_inference_reversal':
      return withModel('Refunded: the node that answered was not verified')
    case 'debit_inference_request':
      return withKey(withModel('Spent on inference request'))
    default:
      return ''
  }
}

/** '+N' for credits, '-N' for debits, locale formatted. */
export function formatAmount(tx: Pick<TransactionRecord, 'type' | 'amount'>): string {
  const value = Math.abs(tx.amount).toLocaleString(undefined, { maximumFractionDigits: 2 })
  return `${isCredit(tx.type) ? '+' : '-'}${value}`
}

/** Tailwind colour classes: credits green, debits red. */
export function amountClass(type: string): string {
  return isCredit(type)
    ? 'text-emerald-700 dark:text-emerald-400'
    : 'text-red-600 dark:text-red-400'
}
