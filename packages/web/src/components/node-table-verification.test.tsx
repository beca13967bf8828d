import { cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import type { NodeRecord } from '../lib/node-records.ts'
import { NodeTable } from './node-table.tsx'

const node: NodeRecord = {
  id: 'n1',
  user: 'u1',
  device_name: 'studio',
  status: 'online',
  total_requests: 3,
  reputation_score: 5,
  is_active: true,
  last_seen: '',
  servingModels: ['Stories 260K'],
}

describe('NodeTable verification columns', () => {
  afterEach(cleanup)

  it("shows the owner's verification state and pending earnings when asked", () => {
    const nodes: NodeRecord[] = [
      {
        ...node,
        id: 'a',
        device_name: 'new box',
        verification: 'probation',
        pending_earnings: 12.5,
      },
      { ...node, id: 'b', device_name: 'old box', verification: 'verified', pending_earnings: 0 },
      { ...node, id: 'c', device_name: 'house', verification: 'trusted' },
    ]
    render(<NodeTable nodes={nodes} />)
    expect(screen.queryByText('Probation')).toBeNull()
    cleanup()
    render(<NodeTable nodes={nodes} showVerification />)
    const row = (name: string) => screen.getByRole('row', { name: new RegExp(name) })
    expect(row('new box').textContent).toContain('Probation')
    expect(row('new box').textContent).toContain('12.5')
    expect(screen.getByText('Probation').getAttribute('title')).toMatch(/earnings are held/)
    expect(row('old box').textContent).toContain('Verified')
    expect(row('old box').textContent).toMatch(/Pending0/)
    expect(row('house').textContent).toContain('Trusted')
  })
})
