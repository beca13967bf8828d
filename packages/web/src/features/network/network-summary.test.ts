import { describe, expect, it } from 'vitest'
import type { NodeRecord } from '../../lib/node-records.ts'
import { networkSummary } from './network-summary.ts'

const now = new Date(2026, 10, 22, 15, 40)
const recent = new Date(2026, 10, 22, 15, 0).toISOString()
const old = new Date(2026, 10, 1).toISOString()
const node = (status: string, is_active: boolean, servingModels: string[]): NodeRecord => ({
  id: status + String(is_active),
  user: 'u',
  device_name: 'd',
  status,
  total_requests: 0,
  reputation_score: 0,
  is_active,
  last_seen: '',
  servingModels,
})

describe('networkSummary', () => {
  it('counts nodes, serving models of reachable nodes, jobs and requests', () => {
    const s = networkSummary(
      [
        node('online', true, ['A', 'B']),
        node('busy', true, ['A']),
        node('offline', true, ['C']),
        node('', false, []),
      ],
      [
        { status: 'pending', created: recent },
        { status: 'acked', created: recent },
        { status: 'completed', created: old },
        { status: 'failed', created: old },
      ],
      [
        { status: 'completed', created: recent, processing_time_ms: 300 },
        { status: 'failed', created: recent },
        { status: 'processing', created: recent },
        { status: 'completed', created: old, processing_time_ms: 9999 },
      ],
      now,
    )
    expect(s.nodes).toEqual({ total: 4, online: 1, busy: 1, offline: 2, active: 1 })
    expect(s.models).toEqual([
      { name: 'A', nodes: 2 },
      { name: 'B', nodes: 1 },
    ])
    expect(s.jobs).toEqual({ pending: 1, acked: 2, total: 4 })
    expect(s.requests).toMatchObject({
      total: 4,
      completed: 2,
      inFlight: 1,
      failed: 1,
      avgResponseMs: 300,
    })
    expect(s.requests.successRate).toBeCloseTo(33.33, 1)
  })
})
