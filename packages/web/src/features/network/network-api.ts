/**
 * @module Network Status data (spec §7): nodes with their serving models, node_jobs, requests and
 * health, all every 5 s. A failed call yields an empty list; a failed health call shows both
 * services offline; when every call fails the API itself is shown Offline.
 */
import { useQuery } from '@tanstack/react-query'
import { getHealth } from '../../lib/api.ts'
import { fetchNodesWithModels, FULL_LIST_BATCH } from '../../lib/node-queries.ts'
import type { NodeRecord } from '../../lib/node-records.ts'
import { pb } from '../../lib/pb.ts'
import type { JobSample, RequestSample } from './network-metrics.ts'

/** Network screen refresh (spec §9). */
export const NETWORK_REFRESH_MS = 5000

export interface NetworkData {
  apiOnline: boolean
  database: boolean
  redis: boolean
  nodes: NodeRecord[]
  jobs: JobSample[]
  requests: RequestSample[]
}

async function settle<T>(
  label: string,
  load: () => Promise<T>,
  fallback: T,
): Promise<{ ok: boolean; value: T }> {
  try {
    return { ok: true, value: await load() }
  } catch (err) {
    console.warn(`Network status: failed to load ${label}`, err)
    return { ok: false, value: fallback }
  }
}

export async function fetchNetworkData(): Promise<NetworkData> {
  const [nodes, jobs, requests, health] = await Promise.all([
    settle('nodes', () => fetchNodesWithModels(), [] as NodeRecord[]),
    settle(
      'jobs',
      () =>
        pb
          .collection('node_jobs')
          .getFullList<JobSample>({ batch: FULL_LIST_BATCH, fields: 'id,status,created' }),
      [] as JobSample[],
    ),
    settle(
      'requests',
      () =>
        pb.collection('requests').getFullList<RequestSample>({
          batch: FULL_LIST_BATCH,
          fields: 'id,status,created,processing_time_ms',
        }),
      [] as RequestSample[],
    ),
    settle('health', getHealth, null),
  ])
  return {
    apiOnline: nodes.ok || jobs.ok || requests.ok || health.ok,
    database: health.value?.services?.database === true,
    redis: health.value?.services?.redis === true,
    nodes: nodes.value,
    jobs: jobs.value,
    requests: requests.value,
  }
}

export function useNetworkData() {
  return useQuery({
    queryKey: ['network'],
    queryFn: fetchNetworkData,
    refetchInterval: NETWORK_REFRESH_MS,
  })
}
