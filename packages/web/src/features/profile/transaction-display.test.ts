import { describe, expect, it } from 'vitest'
import {
  amountClass,
  formatAmount,
  transactionDescription,
  transactionLabel,
  type TransactionRecord,
} from './transaction-display.ts'

const tx = (type: string, amount: number, model?: string): TransactionRecord => ({
  id: 'x',
  user: 'u',
  type,
  amount,
  created: '2026-01-01 00:00:00.000Z',
  expand: model
    ? { request: { id: 'r', expand: { model: { name: 'raw', display_name: model } } } }
    : undefined,
})

describe('transaction display', () => {
  it('labels every named type', () => {
    expect(transactionLabel('credit_admin')).toBe('Admin Credit')
    expect(transactionLabel('debit_admin')).toBe('Admin Debit')
    expect(transactionLabel('credit_inference_request')).toBe('Inference Credit')
    expect(transactionLabel('debit_inference_request')).toBe('Inference Debit')
    expect(transactionLabel('credit_inference_reversal')).toBe('Inference Refund')
    expect(transactionLabel('something_else')).toBe('something_else')
  })
  it('describes transactions, adding the model of inference entries', () => {
    expect(transactionDescription(tx('credit_admin', 100))).toBe('Initial credits or admin credit')
    expect(transactionDescription(tx('credit_inference_request', 3, 'Stories 260K'))).toBe(
      'Earned from processing inference request (Stories 260K)',
    )
    expect(transactionDescription(tx('credit_inference_reversal', 3, 'Stories 260K'))).toBe(
      'Refunded: the node that answered was not verified (Stories 260K)',
    )
    expect(transactionDescription(tx('debit_inference_request', 3, 'Stories 260K'))).toBe(
      'Spent on inference request (Stories 260K)',
    )
    expect(transactionDescription(tx('debit_inference_request', 3))).toBe(
      'Spent on inference request',
    )
  })
  it('names the API key a request was made with', () => {
    const viaKey: TransactionRecord = {
      ...tx('debit_inference_request', 3),
      expand: {
        request: {
          id: 'r',
          expand: { model: { display_name: 'Stories 260K' }, api_key: { name: 'Batch job' } },
        },
      },
    }
    expect(transactionDescription(viaKey)).toBe(
      'Spent on inference request (Stories 260K) via API key “Batch job”',
    )
  })
  it('shows credits green with + and debits red with -', () => {
    expect(formatAmount(tx('credit_admin', 1000))).toBe(`+${(1000).toLocaleString()}`)
    expect(formatAmount(tx('debit_inference_request', -12))).toBe('-12')
    expect(formatAmount(tx('debit_admin', 12))).toBe('-12')
    expect(amountClass('credit_inference_request')).toContain('emerald')
    expect(amountClass('debit_admin')).toContain('red')
  })
})
