import { lazy, Suspense, useState } from 'react'
import { Card } from '../../../components/card.tsx'
import { Spinner } from '../../../components/spinner.tsx'
import { cn } from '../../../lib/cn.ts'
import type { JobPoint, RequestPoint } from '../network-metrics.ts'
import type { MetricsTab } from './network-charts.tsx'

const NetworkCharts = lazy(() => import('./network-charts.tsx'))

const tabs: { id: MetricsTab; label: string }[] = [
  { id: 'requests', label: 'Requests Over Time' },
  { id: 'performance', label: 'Performance Metrics' },
  { id: 'jobs', label: 'Job Queue' },
]

/** 'Network Metrics (Last 24 Hours)' with its three chart tabs. */
export function MetricsPanel({ requests, jobs }: { requests: RequestPoint[]; jobs: JobPoint[] }) {
  const [tab, setTab] = useState<MetricsTab>('requests')
  return (
    <Card className="mt-6 overflow-hidden">
      <div className="border-b border-slate-200 px-5 pt-4 sm:px-6 dark:border-slate-800">
        <h2 className="mb-3 text-base font-semibold text-slate-900 dark:text-white">
          Network Metrics (Last 24 Hours)
        </h2>
        {/* On a phone the three tabs share the width (labels may wrap) so none is off-screen. */}
        <div
          role="tablist"
          aria-label="Metrics"
          className="-mb-px grid grid-cols-3 gap-2 sm:flex sm:gap-4"
        >
          {tabs.map((t) => (
            <button
              key={t.id}
              type="button"
              role="tab"
              id={`tab-${t.id}`}
              aria-selected={tab === t.id}
              aria-controls="metrics-tabpanel"
              onClick={() => setTab(t.id)}
              className={cn(
                'focus-ring border-b-2 px-1 pb-2.5 text-center text-sm font-medium transition-colors sm:shrink-0 sm:whitespace-nowrap',
                tab === t.id
                  ? 'border-brand-600 text-brand-700 dark:border-brand-400 dark:text-brand-400'
                  : 'border-transparent text-slate-500 hover:text-slate-800 dark:text-slate-400 dark:hover:text-slate-200',
              )}
            >
              {t.label}
            </button>
          ))}
        </div>
      </div>
      <div
        id="metrics-tabpanel"
        role="tabpanel"
        aria-labelledby={`tab-${tab}`}
        className="p-4 sm:p-6"
      >
        <Suspense fallback={<Spinner className="h-72 py-0" />}>
          <NetworkCharts tab={tab} requests={requests} jobs={jobs} />
        </Suspense>
      </div>
    </Card>
  )
}
