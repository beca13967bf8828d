import { Activity, Power, Server, Zap } from 'lucide-react'
import type { ComponentType } from 'react'
import { Card } from '../../../components/card.tsx'
import { formatNumber } from '../../../lib/format.ts'
import type { NodeStats as Stats } from '../../../lib/node-records.ts'

function StatCard({
  label,
  value,
  icon: Icon,
}: {
  label: string
  value: number
  icon: ComponentType<{ className?: string }>
}) {
  return (
    <Card className="flex items-center gap-4 p-4 sm:p-5">
      <div className="hidden rounded-lg bg-brand-50 p-2.5 text-brand-600 sm:block dark:bg-brand-500/15 dark:text-brand-400">
        <Icon className="h-5 w-5" />
      </div>
      <div>
        <p className="text-sm text-slate-500 dark:text-slate-400">{label}</p>
        <p className="text-2xl font-semibold text-slate-900 tabular-nums dark:text-white">
          {formatNumber(value)}
        </p>
      </div>
    </Card>
  )
}

/** The four stat cards of My Nodes. */
export function NodeStats({ stats }: { stats: Stats }) {
  return (
    <div className="mb-6 grid grid-cols-2 gap-3 sm:gap-4 lg:grid-cols-4">
      <StatCard label="Total Nodes" value={stats.total} icon={Server} />
      <StatCard label="Online" value={stats.online} icon={Activity} />
      <StatCard label="Active" value={stats.active} icon={Power} />
      <StatCard label="Total Requests" value={stats.totalRequests} icon={Zap} />
    </div>
  )
}
