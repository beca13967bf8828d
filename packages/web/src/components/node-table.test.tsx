import { cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { NodeRecord } from '../lib/node-records.ts'
import { lastSeenTip, NodeTable } from './node-table.tsx'

const node: NodeRecord = {
  id: 'n1',
  user: 'u1',
  device_name: 'studio',
  status: 'busy',
  total_requests: 1234,
  reputation_score: 4.56,
  is_active: true,
  last_seen: '',
  servingModels: ['Stories 260K'],
}

describe('NodeTable', () => {
  afterEach(cleanup)

  it('shows the default empty message', () => {
    render(<NodeTable nodes={[]} />)
    expect(screen.getByText('No nodes')).toBeTruthy()
  })

  it('shows optional columns only when asked, reputation with one decimal', () => {
    render(<NodeTable nodes={[node]} />)
    expect(screen.queryByText('Reputation')).toBeNull()
    expect(screen.queryByRole('button', { name: 'Edit studio' })).toBeNull()
    cleanup()
    const onDelete = vi.fn()
    render(<NodeTable nodes={[node]} showReputation showActive showActions onDelete={onDelete} />)
    expect(screen.getByText('4.6')).toBeTruthy()
    expect(screen.getByText('Stories 260K')).toBeTruthy()
    expect(screen.getByRole('row', { name: /studio/ }).getAttribute('title')).toBe(
      'Last seen: Never',
    )
    fireEvent.click(screen.getByRole('button', { name: 'Delete studio' }))
    expect(onDelete).toHaveBeenCalledWith(node)
  })

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

  it('formats the last-seen tip', () => {
    expect(lastSeenTip(undefined)).toBe('Last seen: Never')
    expect(lastSeenTip('2026-01-02 03:04:05.000Z')).toBe(
      `Last seen: ${new Date('2026-01-02T03:04:05Z').toLocaleString()}`,
    )
  })
})
