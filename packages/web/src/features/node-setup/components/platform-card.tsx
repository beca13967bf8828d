import { Apple, AppWindow, Monitor, Terminal } from 'lucide-react'
import type { ComponentType } from 'react'
import { cn } from '../../../lib/cn.ts'
import { isSelectable, unavailableLabel, type Platform, type PlatformId } from '../platforms.ts'

const icons: Record<PlatformId, ComponentType<{ className?: string }>> = {
  macos: Apple,
  linux: Terminal,
  windows: Monitor,
  'desktop-app': AppWindow,
}

/** One operating-system card; only Available cards can be selected. */
export function PlatformCard({
  platform,
  selected,
  onSelect,
}: {
  platform: Platform
  selected: boolean
  onSelect: () => void
}) {
  const selectable = isSelectable(platform)
  const Icon = icons[platform.id]
  return (
    <button
      type="button"
      disabled={!selectable}
      aria-pressed={selectable ? selected : undefined}
      onClick={onSelect}
      className={cn(
        'focus-ring flex h-full flex-col rounded-xl border p-4 text-left transition-colors',
        selected
          ? 'border-brand-600 bg-brand-50/60 ring-1 ring-brand-600 dark:border-brand-400 dark:bg-brand-500/10 dark:ring-brand-400'
          : 'border-slate-200 bg-white dark:border-slate-800 dark:bg-slate-900',
        selectable
          ? 'hover:border-brand-400 dark:hover:border-brand-500'
          : 'cursor-not-allowed opacity-70',
      )}
    >
      <div className="mb-2 flex w-full items-center justify-between gap-2">
        <span className="inline-flex items-center gap-2 font-semibold text-slate-900 dark:text-white">
          <Icon className="h-5 w-5 text-slate-600 dark:text-slate-300" aria-hidden />
          {platform.name}
        </span>
        <span
          className={cn(
            'rounded-full px-2 py-0.5 text-xs font-medium',
            selectable
              ? 'bg-emerald-50 text-emerald-700 dark:bg-emerald-500/10 dark:text-emerald-300'
              : 'bg-slate-100 text-slate-600 dark:bg-slate-800 dark:text-slate-300',
          )}
        >
          {platform.status}
        </span>
      </div>
      {platform.recommended && (
        <span className="mb-2 w-fit rounded-md bg-brand-600 px-1.5 py-0.5 text-[11px] font-semibold tracking-wide text-white uppercase">
          Recommended
        </span>
      )}
      <p className="text-sm text-slate-600 dark:text-slate-300">{platform.summary}</p>
      <ul className="mt-3 space-y-1 text-xs text-slate-600 dark:text-slate-400">
        {platform.requirements.map((r) => (
          <li key={r}>• {r}</li>
        ))}
      </ul>
      {!selectable && (
        <p className="mt-auto pt-3 text-xs font-medium text-slate-600 dark:text-slate-300">
          {unavailableLabel(platform.status)}
        </p>
      )}
    </button>
  )
}
