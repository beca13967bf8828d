import { describe, expect, it } from 'vitest'
import {
  deviceLabel,
  isNodeActive,
  modelLabel,
  nodeStats,
  nodeStatusLabel,
  nodeStatusTone,
  type NodeRecord,
} from './node-records.ts'

const node = (over: Partial<NodeRecord>): NodeRecord => ({
  id: 'n',
  user: 'u1',
  device_name: 'box',
  status: 'online',
  total_requests: 0,
  reputation_score: 0,
  is_active: true,
  last_seen: '',
  servingModels: [],
  ...over,
})

describe('node status colours', () => {
  it('maps online green, busy blue, offline red, others grey', () => {
    expect(nodeStatusTone('online')).toBe('green')
    expect(nodeStatusTone('busy')).toBe('blue')
    expect(nodeStatusTone('offline')).toBe('red')
    expect(nodeStatusTone('maintenance')).toBe('grey')
  })
  it('reads a missing status as offline', () => {
    expect(nodeStatusTone('')).toBe('red')
    expect(nodeStatusTone(undefined)).toBe('red')
    expect(nodeStatusLabel(null)).toBe('offline')
    expect(nodeStatusLabel('busy')).toBe('busy')
  })
})

describe('node stats', () => {
  it('counts Active only when online and is_active', () => {
    expect(isNodeActive(node({ status: 'online', is_active: true }))).toBe(true)
    expect(isNodeActive(node({ status: 'busy', is_active: true }))).toBe(false)
    expect(isNodeActive(node({ status: 'online', is_active: false }))).toBe(false)
  })
  it('sums the four cards', () => {
    const stats = nodeStats([
      node({ status: 'online', is_active: true, total_requests: 3 }),
      node({ status: 'online', is_active: false, total_requests: 4 }),
      node({ status: 'offline', is_active: true, total_requests: 5 }),
    ])
    expect(stats).toEqual({ total: 3, online: 2, active: 1, totalRequests: 12 })
  })
})

describe('labels', () => {
  it('prefers display_name and defaults device to Unknown', () => {
    expect(modelLabel({ name: 'a', display_name: 'A' })).toBe('A')
    expect(modelLabel({ name: 'a', display_name: '' })).toBe('a')
    expect(deviceLabel({ device_name: '' })).toBe('Unknown')
  })
})
