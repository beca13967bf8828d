import { cn } from '../lib/cn.ts'
import { nodeStatusLabel, nodeStatusTone, type StatusTone } from '../lib/node-records.ts'

const tones: Record<StatusTone, string> = {
  green:
    'bg-emerald-50 text-emerald-700 ring-emerald-600/20 dark:bg-emerald-500/10 dark:text-emerald-300 dark:ring-emerald-400/30',
  blue: 'bg-blue-50 text-blue-700 ring-blue-600/20 dark:bg-blue-500/10 dark:text-blue-300 dark:ring-blue-400/30',
  red: 'bg-red-50 text-red-700 ring-red-600/20 dark:bg-red-500/10 dark:text-red-300 dark:ring-red-400/30',
  grey: 'bg-slate-100 text-slate-700 ring-slate-500/20 dark:bg-slate-800 dark:text-slate-300 dark:ring-slate-500/30',
}
const dots: Record<StatusTone, string> = {
  green: 'bg-emerald-500',
  blue: 'bg-blue-500',
  red: 'bg-red-500',
  grey: 'bg-slate-400',
}

/** Node status pill: online green, busy blue, offline red, anything else grey (spec §4). */
export function NodeStatusBadge({
  status,
  plain = false,
}: {
  status: string | null | undefined
  plain?: boolean
}) {
  const tone = nodeStatusTone(status)
  if (plain) {
    return (
      <span className="inline-flex items-center gap-1.5 text-slate-700 capitalize dark:text-slate-300">
        <span className={cn('h-2 w-2 rounded-full', dots[tone])} aria-hidden />
        {nodeStatusLabel(status)}
      </span>
    )
  }
  return (
    <span
      className={cn(
        'inline-flex items-center gap-1.5 rounded-full px-2.5 py-0.5 text-xs font-medium capitalize ring-1 ring-inset',
        tones[tone],
      )}
    >
      <span className={cn('h-1.5 w-1.5 rounded-full', dots[tone])} aria-hidden />
      {nodeStatusLabel(status)}
    </span>
  )
}
