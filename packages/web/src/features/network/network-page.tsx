import { CloudOff } from 'lucide-react'
import { useMemo } from 'react'
import { Card } from '../../components/card.tsx'
import { NodeTable } from '../../components/node-table.tsx'
import { PageContainer, PageHeader } from '../../components/page-header.tsx'
import { Spinner } from '../../components/spinner.tsx'
import { isNodeActive } from '../../lib/node-records.ts'
import { MetricsPanel } from './components/metrics-panel.tsx'
import { SummaryCards } from './components/summary-cards.tsx'
import { NETWORK_REFRESH_MS, useNetworkData } from './network-api.ts'
import { jobSeries, requestSeries } from './network-metrics.ts'
import { networkSummary } from './network-summary.ts'

/** Network Status (spec §2): health, node, job and request metrics, refreshed every 5 s. */
export default function NetworkPage() {
  const network = useNetworkData()
  const data = network.data
  const view = useMemo(() => {
    if (!data) return null
    const now = new Date()
    return {
      summary: networkSummary(data.nodes, data.jobs, data.requests, now),
      requestPoints: requestSeries(data.requests, now),
      jobPoints: jobSeries(data.jobs, now),
      activeNodes: data.nodes.filter(isNodeActive),
    }
    // dataUpdatedAt too: an unchanged answer keeps its reference, but the hour may have moved on.
  }, [data, network.dataUpdatedAt])

  return (
    <PageContainer>
      <PageHeader title="Network Status" subtitle="Monitor nodes, performance, and system health" />
      {!data || !view ? (
        network.isError ? (
          <SummaryOffline />
        ) : (
          <Spinner label="Loading network status..." />
        )
      ) : (
        <>
          {data.stale && <StaleNotice loadedAt={data.loadedAt} apiOnline={data.apiOnline} />}
          <SummaryCards
            summary={view.summary}
            apiOnline={data.apiOnline}
            database={data.database}
            redis={data.redis}
          />
          <MetricsPanel requests={view.requestPoints} jobs={view.jobPoints} />
          <Card className="mt-6 overflow-hidden">
            <h2 className="border-b border-slate-200 px-5 py-4 text-base font-semibold text-slate-900 sm:px-6 dark:border-slate-800 dark:text-white">
              Active Nodes
            </h2>
            <NodeTable
              nodes={view.activeNodes}
              showReputation
              showStatusBadge={false}
              emptyMessage="No active nodes"
            />
          </Card>
        </>
      )}
    </PageContainer>
  )
}

/** The figures below are the last good ones: the latest refresh could not load them all. */
function StaleNotice({ loadedAt, apiOnline }: { loadedAt: number; apiOnline: boolean }) {
  return (
    <div
      role="status"
      className="mb-4 flex items-start gap-2 rounded-xl border border-amber-200 bg-amber-50 px-4 py-3 text-sm text-amber-900 dark:border-amber-500/30 dark:bg-amber-500/10 dark:text-amber-100"
    >
      <CloudOff className="mt-0.5 h-4 w-4 shrink-0" aria-hidden />
      <p>
        <span className="font-medium">
          {apiOnline ? 'Some figures could not be refreshed.' : 'The server cannot be reached.'}
        </span>{' '}
        Showing the last figures loaded at {new Date(loadedAt).toLocaleTimeString()}; retrying every{' '}
        {NETWORK_REFRESH_MS / 1000} seconds.
      </p>
    </div>
  )
}

/** Shown only if the whole load threw (fetchNetworkData itself catches every call). */
function SummaryOffline() {
  return (
    <Card className="p-6 text-sm text-slate-600 dark:text-slate-300">
      API <span className="font-medium text-red-700 dark:text-red-300">Offline</span>
    </Card>
  )
}
