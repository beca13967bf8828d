import type { HTMLAttributes } from 'react'
import { cn } from '../lib/cn.ts'

/** A bordered surface used for stat cards, tables and panels. */
export function Card({ className, ...props }: HTMLAttributes<HTMLDivElement>) {
  return (
    <div
      className={cn(
        'rounded-xl border border-slate-200 bg-white shadow-sm dark:border-slate-800 dark:bg-slate-900',
        className,
      )}
      {...props}
    />
  )
}
