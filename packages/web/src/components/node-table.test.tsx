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

  it("shows an offline node's models and Active as offline, never live", () => {
    render(<NodeTable nodes={[{ ...node, status: 'offline' }]} showActive />)
    expect(screen.getByText('Stories 260K · offline')).toBeTruthy()
    expect(screen.queryByText('Stories 260K')).toBeNull()
    const active = screen.getByText('Active · offline')
    expect(active.className).not.toContain('emerald')
    cleanup()
    render(<NodeTable nodes={[node]} showActive />)
    expect(screen.getByText('Stories 260K')).toBeTruthy()
    expect(screen.getAllByText('Active').some((e) => e.className.includes('emerald'))).toBe(true)
  })

  it('formats the last-seen tip', () => {
    expect(lastSeenTip(undefined)).toBe('Last seen: Never')
    expect(lastSeenTip('2026-01-02 03:04:05.000Z')).toBe(
      `Last seen: ${new Date('2026-01-02T03:04:05Z').toLocaleString()}`,
    )
  })
})
