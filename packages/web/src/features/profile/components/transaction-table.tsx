import { Receipt } from 'lucide-react'
import { Button } from '../../../components/button.tsx'
import { Card } from '../../../components/card.tsx'
import { Spinner } from '../../../components/spinner.tsx'
import { parseRecordDate } from '../../../lib/format.ts'
import {
  amountClass,
  formatAmount,
  transactionDescription,
  transactionLabel,
  type TransactionRecord,
} from '../transaction-display.ts'

export interface TransactionTableProps {
  items: TransactionRecord[]
  loading: boolean
  page: number
  totalPages: number
  onPage: (page: number) => void
}

/** 'Transaction History' with Previous / Next and 'Page X of Y' when there is more than one page. */
export function TransactionTable({
  items,
  loading,
  page,
  totalPages,
  onPage,
}: TransactionTableProps) {
  return (
    <Card className="overflow-hidden">
      <h2 className="border-b border-slate-200 px-5 py-4 text-base font-semibold text-slate-900 sm:px-6 dark:border-slate-800 dark:text-white">
        Transaction History
      </h2>
      {loading && items.length === 0 ? (
        <Spinner />
      ) : items.length === 0 ? (
        <div className="px-6 py-14 text-center">
          <Receipt
            className="mx-auto mb-3 h-9 w-9 text-slate-300 dark:text-slate-600"
            aria-hidden
          />
          <p className="font-medium text-slate-800 dark:text-slate-200">No transactions yet</p>
          <p className="mt-1 text-sm text-slate-500 dark:text-slate-400">
            Your transaction history will appear here
          </p>
        </div>
      ) : (
        // Scrolls sideways on a phone: focusable, so the keyboard can scroll it too.
        <div
          className="focus-ring overflow-x-auto"
          tabIndex={0}
          role="region"
          aria-label="Transaction history table"
        >
          <table className="w-full min-w-[40rem] text-left text-sm">
            <thead className="bg-slate-50 text-xs font-medium tracking-wide text-slate-500 uppercase dark:bg-slate-950/40 dark:text-slate-400">
              <tr>
                <th scope="col" className="px-5 py-3 sm:px-6">
                  Date/Time
                </th>
                <th scope="col" className="px-3 py-3">
                  Type
                </th>
                <th scope="col" className="px-3 py-3 text-right">
                  Amount
                </th>
                <th scope="col" className="px-5 py-3 sm:px-6">
                  Description
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-slate-100 dark:divide-slate-800">
              {items.map((tx) => (
                <tr key={tx.id} className="hover:bg-slate-50/70 dark:hover:bg-slate-800/40">
                  <td className="px-5 py-3 whitespace-nowrap text-slate-600 sm:px-6 dark:text-slate-300">
                    {parseRecordDate(tx.created).toLocaleString()}
                  </td>
                  <td className="px-3 py-3 whitespace-nowrap font-medium text-slate-800 dark:text-slate-100">
                    {transactionLabel(tx.type)}
                  </td>
                  <td
                    className={`px-3 py-3 text-right font-semibold whitespace-nowrap tabular-nums ${amountClass(tx.type)}`}
                  >
                    {formatAmount(tx)}
                  </td>
                  <td className="px-5 py-3 text-slate-600 sm:px-6 dark:text-slate-300">
                    {transactionDescription(tx)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {totalPages > 1 && (
        <div className="flex items-center justify-between border-t border-slate-200 px-5 py-3 sm:px-6 dark:border-slate-800">
          <Button variant="outline" size="sm" disabled={page <= 1} onClick={() => onPage(page - 1)}>
            Previous
          </Button>
          <span className="text-sm text-slate-600 dark:text-slate-400">
            Page {page} of {totalPages}
          </span>
          <Button
            variant="outline"
            size="sm"
            disabled={page >= totalPages}
            onClick={() => onPage(page + 1)}
          >
            Next
          </Button>
        </div>
      )}
    </Card>
  )
}
