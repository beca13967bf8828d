import { Loader2 } from 'lucide-react'
import { cn } from '../lib/cn.ts'

/** A centred spinner with a line of text under it. */
export function Spinner({ label, className }: { label?: string; className?: string }) {
  return (
    <div
      role="status"
      className={cn(
        'flex flex-col items-center justify-center gap-3 py-16 text-slate-500 dark:text-slate-400',
        className,
      )}
    >
      <Loader2 className="h-8 w-8 animate-spin text-brand-600 dark:text-brand-400" aria-hidden />
      {label && <p className="text-sm">{label}</p>}
    </div>
  )
}
