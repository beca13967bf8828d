import { ArrowDownRight, ArrowUpRight, Hourglass, Wallet } from 'lucide-react'
import type { ReactNode } from 'react'
import { Card } from '../../../components/card.tsx'
import type { Balance } from '../../../hooks/use-balance.ts'
import { formatNumber } from '../../../lib/format.ts'

/**
 * 'Token Balance': Available, Total Earned, Pending Earnings (earned by nodes on probation, paid
 * once they are verified, returned to the payers if they are caught) and Total Spent.
 */
export function BalanceCard({ balance, loading }: { balance?: Balance; loading: boolean }) {
  const value = (n: number | undefined) => (loading || n === undefined ? '…' : formatNumber(n, 2))
  return (
    <Card className="p-5 sm:p-6">
      <h2 className="mb-4 text-base font-semibold text-slate-900 dark:text-white">Token Balance</h2>
      <div className="grid gap-4 sm:grid-cols-2 lg:grid-cols-4">
        <Stat
          icon={<Wallet className="h-4 w-4" />}
          tone="brand"
          label="Available"
          value={value(balance?.balance)}
        />
        <Stat
          icon={<ArrowUpRight className="h-4 w-4" />}
          tone="green"
          label="Total Earned"
          value={value(balance?.total_earned)}
        />
        <Stat
          icon={<Hourglass className="h-4 w-4" />}
          tone="amber"
          label="Pending Earnings"
          value={value(balance?.pending_earnings)}
          tip="Earned by your nodes while on probation: paid once they pass their checks"
        />
        <Stat
          icon={<ArrowDownRight className="h-4 w-4" />}
          tone="red"
          label="Total Spent"
          value={value(balance?.total_spent)}
        />
      </div>
    </Card>
  )
}

const tones = {
  brand: 'bg-brand-50 text-brand-700 dark:bg-brand-500/15 dark:text-brand-400',
  green: 'bg-emerald-50 text-emerald-700 dark:bg-emerald-500/15 dark:text-emerald-400',
  red: 'bg-red-50 text-red-700 dark:bg-red-500/15 dark:text-red-400',
  amber: 'bg-amber-50 text-amber-700 dark:bg-amber-500/15 dark:text-amber-300',
}

function Stat({
  icon,
  tone,
  label,
  value,
  tip,
}: {
  icon: ReactNode
  tone: keyof typeof tones
  label: string
  value: string
  tip?: string
}) {
  return (
    <div
      role="group"
      aria-label={label}
      title={tip}
      className="rounded-lg border border-slate-100 bg-slate-50/60 p-4 dark:border-slate-800 dark:bg-slate-950/40"
    >
      <div className="flex items-center gap-2 text-sm text-slate-600 dark:text-slate-400">
        <span className={`rounded-md p-1.5 ${tones[tone]}`} aria-hidden>
          {icon}
        </span>
        {label}
      </div>
      <p className="mt-2 text-2xl font-semibold tabular-nums text-slate-900 dark:text-white">
        {value}
      </p>
    </div>
  )
}
