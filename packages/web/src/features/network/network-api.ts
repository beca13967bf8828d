/**
 * @module Network Status data (spec §7): nodes with their serving models, node_jobs, requests and
 * health, all every 5 s. A call that fails on the first load yields an empty list (spec §8); once
 * a part has loaded, a failed refresh keeps its last good value and marks it stale, so a server
 * that goes away does not turn every figure into 0. A failed health call shows both services
 * offline; when every call fails the API itself is shown Offline.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query'
import { getHealth, type HealthResult, type ServiceState } from '../../lib/api.ts'
import { fetchNodesWithModels, FULL_LIST_BATCH } from '../../lib/node-queries.ts'
import type { NodeRecord } from '../../lib/node-records.ts'
import { pb } from '../../lib/pb.ts'
import type { JobSample, RequestSample } from './network-metrics.ts'

/** Network screen refresh (spec §9). */
export const NETWORK_REFRESH_MS = 5000

export const networkKey = ['network'] as const

export interface NetworkData {
  apiOnline: boolean
  database: ServiceState
  redis: ServiceState
  nodes: NodeRecord[]
  jobs: JobSample[]
  requests: RequestSample[]
  /** When the figures shown were last loaded in full (epoch ms). */
  loadedAt: number
  /** Some figures are from an earlier refresh: the last one could not load them. */
  stale: boolean
}

interface Part<T> {
  ok: boolean
  value: T
}

async function settle<T>(label: string, load: () => Promise<T>, fallback: T): Promise<Part<T>> {
  try {
    return { ok: true, value: await load() }
  } catch (err) {
    console.warn(`Network status: failed to load ${label}`, err)
    return { ok: false, value: fallback }
  }
}

/** The service states of a health answer; Redis reads from the boolean for older servers. */
export function serviceStates(health: HealthResult | null): {
  database: ServiceState
  redis: ServiceState
} {
  if (!health) return { database: 'offline', redis: 'offline' }
  const bool = (up: boolean | undefined): ServiceState => (up === true ? 'online' : 'offline')
  return {
    database: health.states?.database ?? bool(health.services?.database),
    redis: health.states?.redis ?? bool(health.services?.redis),
  }
}

/** Loads every part; a part that fails keeps its value from `previous` when there is one. */
export async function fetchNetworkData(
  previous?: NetworkData,
  now: () => number = Date.now,
): Promise<NetworkData> {
  const [nodes, jobs, requests, health] = await Promise.all([
    settle('nodes', () => fetchNodesWithModels(), previous?.nodes ?? []),
    settle(
      'jobs',
      () =>
        pb
          .collection('node_jobs')
          .getFullList<JobSample>({ batch: FULL_LIST_BATCH, fields: 'id,status,created' }),
      previous?.jobs ?? [],
    ),
    settle(
      'requests',
      () =>
        pb.collection('requests').getFullList<RequestSample>({
          batch: FULL_LIST_BATCH,
          fields: 'id,status,created,processing_time_ms',
        }),
      previous?.requests ?? [],
    ),
    settle('health', getHealth, null),
  ])
  const lists = [nodes, jobs, requests]
  const allOk = lists.every((p) => p.ok)
  return {
    apiOnline: lists.some((p) => p.ok) || health.ok,
    ...serviceStates(health.value),
    nodes: nodes.value,
    jobs: jobs.value,
    requests: requests.value,
    loadedAt: allOk || !previous ? now() : previous.loadedAt,
    stale: !!previous && !allOk,
  }
}

export function useNetworkData() {
  const queryClient = useQueryClient()
  return useQuery({
    queryKey: networkKey,
    queryFn: () => fetchNetworkData(queryClient.getQueryData<NetworkData>(networkKey)),
    refetchInterval: NETWORK_REFRESH_MS,
  })
}
