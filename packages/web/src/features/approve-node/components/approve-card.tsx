import { Check, Cpu, ShieldCheck } from 'lucide-react'
import type { ReactNode } from 'react'
import { Card } from '../../../components/card.tsx'

/** The centred card every state of the approve screen sits in. */
export function ApproveCard({
  icon,
  title,
  children,
}: {
  icon?: ReactNode
  title: string
  children: ReactNode
}) {
  return (
    <div className="mx-auto w-full max-w-md px-4 py-10 sm:py-16">
      <Card className="p-6 sm:p-8">
        <div className="mb-5 flex flex-col items-center text-center">
          <div className="mb-4 rounded-full bg-brand-50 p-3 text-brand-600 dark:bg-brand-500/15 dark:text-brand-400">
            {icon ?? <ShieldCheck className="h-7 w-7" aria-hidden />}
          </div>
          <h1 className="text-xl font-semibold text-slate-900 dark:text-white">{title}</h1>
        </div>
        {children}
      </Card>
    </div>
  )
}

/** Device name and the list of what the node may do. */
export function NodeGrant({
  device,
  permissions,
}: {
  device: string
  permissions: readonly string[]
}) {
  return (
    <>
      <div className="mb-5 flex items-center gap-3 rounded-lg border border-slate-200 bg-slate-50 px-4 py-3 dark:border-slate-800 dark:bg-slate-950/40">
        <Cpu className="h-5 w-5 shrink-0 text-slate-500 dark:text-slate-400" aria-hidden />
        <div className="min-w-0">
          <p className="text-xs text-slate-500 dark:text-slate-400">Device</p>
          <p className="truncate font-medium text-slate-900 dark:text-white">{device}</p>
        </div>
      </div>
      <p className="mb-2 text-sm text-slate-600 dark:text-slate-300">This node will be able to:</p>
      <ul className="mb-6 space-y-2">
        {permissions.map((p) => (
          <li key={p} className="flex items-start gap-2 text-sm text-slate-700 dark:text-slate-200">
            <Check
              className="mt-0.5 h-4 w-4 shrink-0 text-emerald-600 dark:text-emerald-400"
              aria-hidden
            />
            {p}
          </li>
        ))}
      </ul>
    </>
  )
}
