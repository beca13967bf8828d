import { Activity, Boxes, Database, ListOrdered, Server } from 'lucide-react'
import type { ComponentType, ReactNode } from 'react'
import { Card } from '../../../components/card.tsx'
import type { ServiceState } from '../../../lib/api.ts'
import { cn } from '../../../lib/cn.ts'
import { formatNumber } from '../../../lib/format.ts'
import { formatMs, formatPercent } from '../network-metrics.ts'
import type { NetworkSummary } from '../network-summary.ts'

function SummaryCard({
  title,
  icon: Icon,
  children,
}: {
  title: string
  icon: ComponentType<{ className?: string }>
  children: ReactNode
}) {
  return (
    <Card className="p-5">
      <div className="mb-4 flex items-center gap-2">
        <div className="rounded-lg bg-brand-50 p-2 text-brand-600 dark:bg-brand-500/15 dark:text-brand-400">
          <Icon className="h-4 w-4" />
        </div>
        <h2 className="text-sm font-semibold text-slate-900 dark:text-white">{title}</h2>
      </div>
      {children}
    </Card>
  )
}

function Row({ label, value, tone }: { label: string; value: ReactNode; tone?: string }) {
  return (
    <div className="flex items-center justify-between py-1 text-sm">
      <dt className="text-slate-500 dark:text-slate-400">{label}</dt>
      <dd className={cn('font-medium text-slate-900 tabular-nums dark:text-white', tone)}>
        {value}
      </dd>
    </div>
  )
}

const serviceLook: Record<ServiceState, { text: string; dot: string; label: string }> = {
  online: {
    text: 'text-emerald-700 dark:text-emerald-300',
    dot: 'bg-emerald-500',
    label: 'Online',
  },
  offline: { text: 'text-red-700 dark:text-red-300', dot: 'bg-red-500', label: 'Offline' },
  not_configured: {
    text: 'text-slate-600 dark:text-slate-300',
    dot: 'bg-slate-400',
    label: 'Not configured',
  },
}

function ServiceStatus({ state }: { state: ServiceState }) {
  const look = serviceLook[state]
  return (
    <span className={cn('inline-flex items-center gap-1.5', look.text)}>
      <span className={cn('h-2 w-2 rounded-full', look.dot)} aria-hidden />
      {look.label}
    </span>
  )
}

export interface SummaryCardsProps {
  summary: NetworkSummary
  apiOnline: boolean
  database: ServiceState
  redis: ServiceState
}

/** Node Overview, System Health and Model Availability, then Job Queue and Requests (spec §2). */
export function SummaryCards({ summary, apiOnline, database, redis }: SummaryCardsProps) {
  const { nodes, models, jobs, requests } = summary
  return (
    <>
      <div className="grid gap-4 md:grid-cols-3">
        <SummaryCard title="Node Overview" icon={Server}>
          <p className="mb-2 text-3xl font-semibold text-slate-900 tabular-nums dark:text-white">
            {formatNumber(nodes.total)}
            <span className="ml-1.5 text-sm font-normal text-slate-500 dark:text-slate-400">
              nodes
            </span>
          </p>
          <dl>
            <Row label="Online" value={formatNumber(nodes.online)} />
            <Row label="Busy" value={formatNumber(nodes.busy)} />
            <Row label="Offline" value={formatNumber(nodes.offline)} />
            <Row label="Active" value={formatNumber(nodes.active)} />
          </dl>
        </SummaryCard>
        <SummaryCard title="System Health" icon={Database}>
          <dl>
            <Row label="API" value={<ServiceStatus state={apiOnline ? 'online' : 'offline'} />} />
            <Row label="Database" value={<ServiceStatus state={database} />} />
            <Row
              label="Redis"
              value={
                <span
                  title={
                    redis === 'not_configured'
                      ? 'This coordinator runs alone on its embedded bus (no REDIS_URL)'
                      : undefined
                  }
                >
                  <ServiceStatus state={redis} />
                </span>
              }
            />
          </dl>
        </SummaryCard>
        <SummaryCard title="Model Availability" icon={Boxes}>
          <p className="mb-2 text-3xl font-semibold text-slate-900 tabular-nums dark:text-white">
            {formatNumber(models.length)}
            <span className="ml-1.5 text-sm font-normal text-slate-500 dark:text-slate-400">
              {models.length === 1 ? 'model served' : 'models served'}
            </span>
          </p>
          {models.length === 0 ? (
            <p className="text-sm text-slate-500 dark:text-slate-400">No models are being served</p>
          ) : (
            <dl className="max-h-28 overflow-y-auto">
              {models.map((m) => (
                <Row
                  key={m.name}
                  label={m.name}
                  value={`${m.nodes} ${m.nodes === 1 ? 'node' : 'nodes'}`}
                />
              ))}
            </dl>
          )}
        </SummaryCard>
      </div>
      <div className="mt-4 grid gap-4 md:grid-cols-2">
        <SummaryCard title="Job Queue" icon={ListOrdered}>
          <dl className="grid grid-cols-3 gap-4">
            <Stat label="Pending" value={formatNumber(jobs.pending)} />
            <Stat label="Acknowledged" value={formatNumber(jobs.acked)} />
            <Stat label="Total" value={formatNumber(jobs.total)} />
          </dl>
          <AckBar acked={jobs.acked} total={jobs.total} />
        </SummaryCard>
        <SummaryCard title="Requests" icon={Activity}>
          <dl className="grid grid-cols-3 gap-4">
            <Stat label="Total" value={formatNumber(requests.total)} />
            <Stat label="Completed" value={formatNumber(requests.completed)} />
            <Stat label="In progress" value={formatNumber(requests.inFlight)} />
            <Stat label="Failed" value={formatNumber(requests.failed)} />
            <Stat label="Success rate" value={formatPercent(requests.successRate)} />
            <Stat label="Avg response" value={formatMs(requests.avgResponseMs)} />
          </dl>
        </SummaryCard>
      </div>
    </>
  )
}

function Stat({ label, value }: { label: string; value: string }) {
  return (
    <div className="min-w-0">
      <dt className="truncate text-xs text-slate-500 dark:text-slate-400">{label}</dt>
      <dd className="mt-0.5 text-lg font-semibold text-slate-900 tabular-nums dark:text-white">
        {value}
      </dd>
    </div>
  )
}

/** Share of jobs a node has acknowledged. */
function AckBar({ acked, total }: { acked: number; total: number }) {
  const percent = total === 0 ? 0 : (acked / total) * 100
  return (
    <div className="mt-5">
      <div className="mb-1 flex justify-between text-xs text-slate-500 dark:text-slate-400">
        <span>Acknowledged by nodes</span>
        <span className="tabular-nums">{total === 0 ? 'No jobs yet' : formatPercent(percent)}</span>
      </div>
      <div className="h-2 overflow-hidden rounded-full bg-slate-200 dark:bg-slate-800" aria-hidden>
        <div className="h-full rounded-full bg-brand-600" style={{ width: `${percent}%` }} />
      </div>
    </div>
  )
}
