/** @module The numbers of the Network Status cards. */
import { isNodeActive, type NodeRecord } from '../../lib/node-records.ts'
import {
  averageResponseMs,
  isAcknowledgedJob,
  requestsInWindow,
  successRate,
  type JobSample,
  type RequestSample,
} from './network-metrics.ts'

export interface ModelAvailability {
  name: string
  nodes: number
}

export interface NetworkSummary {
  nodes: { total: number; online: number; busy: number; offline: number; active: number }
  models: ModelAvailability[]
  jobs: { pending: number; acked: number; total: number }
  requests: {
    total: number
    completed: number
    inFlight: number
    failed: number
    successRate: number
    avgResponseMs: number
  }
}

/** Counts for the five cards; rates and response times cover the last 24 hours. */
export function networkSummary(
  nodes: NodeRecord[],
  jobs: JobSample[],
  requests: RequestSample[],
  now: Date,
): NetworkSummary {
  const perModel = new Map<string, number>()
  for (const node of nodes) {
    if (node.status !== 'online' && node.status !== 'busy') continue
    for (const name of new Set(node.servingModels))
      perModel.set(name, (perModel.get(name) ?? 0) + 1)
  }
  const recent = requestsInWindow(requests, now)
  return {
    nodes: {
      total: nodes.length,
      online: nodes.filter((n) => n.status === 'online').length,
      busy: nodes.filter((n) => n.status === 'busy').length,
      offline: nodes.filter((n) => !n.status || n.status === 'offline').length,
      active: nodes.filter(isNodeActive).length,
    },
    models: [...perModel]
      .map(([name, count]) => ({ name, nodes: count }))
      .sort((a, b) => b.nodes - a.nodes || a.name.localeCompare(b.name)),
    jobs: {
      pending: jobs.filter((j) => j.status === 'pending').length,
      acked: jobs.filter((j) => isAcknowledgedJob(j.status)).length,
      total: jobs.length,
    },
    requests: {
      total: requests.length,
      completed: requests.filter((r) => r.status === 'completed').length,
      inFlight: requests.filter((r) => r.status === 'pending' || r.status === 'processing').length,
      failed: requests.filter((r) => r.status === 'failed').length,
      successRate: successRate(recent),
      avgResponseMs: averageResponseMs(recent),
    },
  }
}
