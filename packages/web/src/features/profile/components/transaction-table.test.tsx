import { cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { TransactionRecord } from '../transaction-display.ts'
import { TransactionTable } from './transaction-table.tsx'

const tx: TransactionRecord = {
  id: 't1',
  user: 'u',
  type: 'credit_admin',
  amount: 1000,
  created: '2026-01-02 03:04:05.000Z',
}

describe('TransactionTable', () => {
  afterEach(cleanup)

  it('shows the empty state', () => {
    render(
      <TransactionTable items={[]} loading={false} page={1} totalPages={1} onPage={() => {}} />,
    )
    expect(screen.getByText('No transactions yet')).toBeTruthy()
    expect(screen.getByText('Your transaction history will appear here')).toBeTruthy()
  })

  it('shows rows without paging controls on a single page', () => {
    render(
      <TransactionTable items={[tx]} loading={false} page={1} totalPages={1} onPage={() => {}} />,
    )
    for (const h of ['Date/Time', 'Type', 'Amount', 'Description'])
      expect(screen.getByRole('columnheader', { name: h })).toBeTruthy()
    expect(screen.getByText('Admin Credit')).toBeTruthy()
    expect(screen.getByText('Initial credits or admin credit')).toBeTruthy()
    expect(screen.queryByText(/Page \d+ of/)).toBeNull()
    expect(screen.queryByRole('button', { name: 'Next' })).toBeNull()
  })

  it('pages with Previous / Next and Page X of Y', () => {
    const onPage = vi.fn()
    render(
      <TransactionTable items={[tx]} loading={false} page={2} totalPages={3} onPage={onPage} />,
    )
    expect(screen.getByText('Page 2 of 3')).toBeTruthy()
    fireEvent.click(screen.getByRole('button', { name: 'Next' }))
    fireEvent.click(screen.getByRole('button', { name: 'Previous' }))
    expect(onPage.mock.calls).toEqual([[3], [1]])
  })

  it('disables Previous on the first page and Next on the last', () => {
    render(
      <TransactionTable items={[tx]} loading={false} page={1} totalPages={2} onPage={() => {}} />,
    )
    expect((screen.getByRole('button', { name: 'Previous' }) as HTMLButtonElement).disabled).toBe(
      true,
    )
    expect((screen.getByRole('button', { name: 'Next' }) as HTMLButtonElement).disabled).toBe(false)
  })
})
