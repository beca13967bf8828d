import { cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { NodeModelRecord, NodeRecord } from '../../../lib/node-records.ts'
import { EditNodeBody } from './edit-node-dialog.tsx'

const state = vi.hoisted(() => ({ records: [] as NodeModelRecord[], mutate: vi.fn() }))

vi.mock('../nodes-api.ts', () => ({
  actionFailure: {},
  useCatalogue: () => ({
    data: [
      { id: 'm1', name: 'stories', display_name: 'Stories', file_size_bytes: 1024 ** 3 * 1.25 },
    ],
    isLoading: false,
  }),
  useNodeModels: () => ({ data: state.records, isLoading: false }),
  useNodeModelAction: () => ({ mutate: state.mutate, isPending: false }),
  useUpdateNode: () => ({ mutate: state.mutate, isPending: false }),
}))

const node: NodeRecord = {
  id: 'n1',
  user: 'u1',
  device_name: 'studio-mac',
  status: 'online',
  total_requests: 3,
  reputation_score: 4.2,
  is_active: false,
  last_seen: '',
  servingModels: [],
}

const record = (over: Partial<NodeModelRecord>): NodeModelRecord => ({
  id: 'nm1',
  node: 'n1',
  model: 'm1',
  requested_download: true,
  requested_serving: false,
  is_downloaded: false,
  is_serving: false,
  tokens_per_second: 0,
  download_progress: '0',
  error_message: '',
  ...over,
})

describe('EditNodeBody', () => {
  afterEach(() => {
    cleanup()
    state.records = []
    state.mutate.mockReset()
  })

  it('disables Update while the device name is empty', () => {
    render(<EditNodeBody node={node} />)
    const update = screen.getByRole('button', { name: 'Update' })
    expect((update as HTMLButtonElement).disabled).toBe(false)
    fireEvent.change(screen.getByLabelText('Device Name'), { target: { value: '   ' } })
    expect((update as HTMLButtonElement).disabled).toBe(true)
  })

  it('disables the status toggle with a warning while nothing is serving', () => {
    render(<EditNodeBody node={node} />)
    expect((screen.getByRole('switch') as HTMLButtonElement).disabled).toBe(true)
    expect(screen.getByRole('note').textContent).toContain('Start serving at least one model')
  })

  it('enables the toggle once a model serves', () => {
    state.records = [record({ is_downloaded: true, is_serving: true, tokens_per_second: 12.34 })]
    render(<EditNodeBody node={node} />)
    expect((screen.getByRole('switch') as HTMLButtonElement).disabled).toBe(false)
    expect(screen.queryByRole('note')).toBeNull()
    expect(screen.getByText(/12\.3 tok\/s/)).toBeTruthy()
    expect(screen.getByRole('button', { name: 'Stop Serving' })).toBeTruthy()
  })

  it('shows Download with the size in GB, and a percent bar while downloading', () => {
    render(<EditNodeBody node={node} />)
    expect(screen.getByText('1.3 GB')).toBeTruthy()
    fireEvent.click(screen.getByRole('button', { name: 'Download' }))
    expect(state.mutate.mock.calls[0][0]).toEqual({ kind: 'download', modelId: 'm1' })
    cleanup()
    state.records = [record({ download_progress: '37.6' })]
    render(<EditNodeBody node={node} />)
    expect(screen.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('38')
    expect(screen.getByRole('button', { name: 'Cancel' })).toBeTruthy()
  })
})
