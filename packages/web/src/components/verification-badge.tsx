import { cn } from '../lib/cn.ts'
import { verificationDisplay, type VerificationTone } from '../lib/node-records.ts'

const verificationTones: Record<VerificationTone, string> = {
  amber:
    'bg-amber-50 text-amber-800 ring-amber-600/20 dark:bg-amber-500/10 dark:text-amber-200 dark:ring-amber-400/30',
  green:
    'bg-emerald-50 text-emerald-700 ring-emerald-600/20 dark:bg-emerald-500/10 dark:text-emerald-300 dark:ring-emerald-400/30',
  blue: 'bg-blue-50 text-blue-700 ring-blue-600/20 dark:bg-blue-500/10 dark:text-blue-300 dark:ring-blue-400/30',
}

/** Probation (amber), Verified (green) or Trusted (blue), with what it means as a tip. */
export function VerificationBadge({ verification }: { verification: string | undefined }) {
  const v = verificationDisplay(verification)
  return (
    <span
      title={v.tip}
      className={cn(
        'inline-flex items-center rounded-full px-2.5 py-0.5 text-xs font-medium ring-1 ring-inset',
        verificationTones[v.tone],
      )}
    >
      {v.label}
    </span>
  )
}
