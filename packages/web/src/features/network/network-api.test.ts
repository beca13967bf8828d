import { beforeEach, describe, expect, it, vi } from 'vitest'
import type { NodeRecord } from '../../lib/node-records.ts'
import { fetchNetworkData, serviceStates } from './network-api.ts'

// The four calls of the screen, each able to fail on demand.
const calls = vi.hoisted(() => ({
  nodes: vi.fn(),
  jobs: vi.fn(),
  requests: vi.fn(),
  health: vi.fn(),
}))
vi.mock('../../lib/node-queries.ts', () => ({
  FULL_LIST_BATCH: 500,
  fetchNodesWithModels: calls.nodes,
}))
vi.mock('../../lib/api.ts', () => ({ getHealth: calls.health }))
vi.mock('../../lib/pb.ts', () => ({
  pb: {
    collection: (name: string) => ({
      getFullList: name === 'node_jobs' ? calls.jobs : calls.requests,
    }),
  },
}))

const node = { id: 'n1', status: 'online', servingModels: ['Stories 260K'] } as NodeRecord
const jobs = [{ status: 'acked', created: '2026-11-22 10:00:00.000Z' }]
const requests = [
  { status: 'completed', created: '2026-11-22 10:00:00.000Z', processing_time_ms: 9 },
]
const down = () => Promise.reject(new TypeError('Failed to fetch'))

describe('fetchNetworkData', () => {
  beforeEach(() => {
    vi.spyOn(console, 'warn').mockImplementation(() => {})
    calls.nodes.mockResolvedValue([node])
    calls.jobs.mockResolvedValue(jobs)
    calls.requests.mockResolvedValue(requests)
    calls.health.mockResolvedValue({
      status: 'healthy',
      services: { database: true, redis: false },
      states: { database: 'online', redis: 'not_configured' },
    })
  })

  it('loads every part; Redis on the embedded bus reads not configured', async () => {
    const data = await fetchNetworkData(undefined, () => 1000)
    expect(data).toEqual({
      apiOnline: true,
      database: 'online',
      redis: 'not_configured',
      nodes: [node],
      jobs,
      requests,
      loadedAt: 1000,
      stale: false,
    })
  })

  it('on the first load, failed calls give empty lists and offline services (spec §8)', async () => {
    for (const call of Object.values(calls)) call.mockImplementation(down)
    const data = await fetchNetworkData(undefined, () => 1000)
    expect(data).toMatchObject({
      apiOnline: false,
      database: 'offline',
      redis: 'offline',
      nodes: [],
      jobs: [],
      requests: [],
      stale: false,
    })
  })

  it('keeps the last good figures, marked stale, when a refresh fails; fresh again once it works', async () => {
    const good = await fetchNetworkData(undefined, () => 1000)
    for (const call of Object.values(calls)) call.mockImplementation(down)
    const failed = await fetchNetworkData(good, () => 6000)
    expect(failed).toMatchObject({
      apiOnline: false,
      database: 'offline',
      nodes: [node],
      jobs,
      requests,
      loadedAt: 1000,
      stale: true,
    })
    calls.jobs.mockResolvedValue([])
    calls.nodes.mockResolvedValue([node])
    calls.requests.mockResolvedValue(requests)
    const partly = await fetchNetworkData(failed, () => 11000)
    // Every call answers again: fresh figures, today's empty job list included.
    expect(partly).toMatchObject({ jobs: [], stale: false, loadedAt: 11000, apiOnline: true })
    calls.requests.mockImplementation(down)
    const oneDown = await fetchNetworkData(partly, () => 16000)
    expect(oneDown).toMatchObject({ requests, stale: true, loadedAt: 11000, apiOnline: true })
  })
})

describe('serviceStates', () => {
  it('reads the states, or the spec booleans from a server without them', () => {
    expect(serviceStates(null)).toEqual({ database: 'offline', redis: 'offline' })
    expect(
      serviceStates({ status: 'healthy', services: { database: true, redis: false } }),
    ).toEqual({ database: 'online', redis: 'offline' })
    expect(
      serviceStates({
        status: 'degraded',
        services: { database: true, redis: false },
        states: { database: 'online', redis: 'offline' },
      }),
    ).toEqual({ database: 'online', redis: 'offline' })
  })
})
