import { cleanup, fireEvent, render, screen, within } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { CatalogueModel, NodeModelRecord, NodeRecord } from '../../../lib/node-records.ts'
import { withProviders } from '../../../test/providers.tsx'
import { EditNodeBody } from './edit-node-dialog.tsx'

const stories = {
  id: 'm1',
  name: 'stories',
  display_name: 'Stories',
  file_size_bytes: 1024 ** 3 * 1.25,
}
const state = vi.hoisted(() => ({
  records: [] as NodeModelRecord[],
  extraModels: [] as CatalogueModel[],
  mutate: vi.fn(),
}))

vi.mock('../nodes-api.ts', () => ({
  actionFailure: {},
  useCatalogue: () => ({ data: [stories, ...state.extraModels], isLoading: false }),
  useNodeModels: () => ({ data: state.records, isLoading: false }),
  useNodeModelAction: () => ({ mutate: state.mutate, isPending: false }),
  useLiveNode: (n: NodeRecord) => n,
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
    state.extraModels = []
    state.mutate.mockReset()
  })

  it('disables Update while the device name is empty', () => {
    render(withProviders(<EditNodeBody node={node} />))
    const update = screen.getByRole('button', { name: 'Update' })
    expect((update as HTMLButtonElement).disabled).toBe(false)
    fireEvent.change(screen.getByLabelText('Device Name'), { target: { value: '   ' } })
    expect((update as HTMLButtonElement).disabled).toBe(true)
  })

  it('disables the status toggle with a warning while nothing is serving', () => {
    render(withProviders(<EditNodeBody node={node} />))
    expect((screen.getByRole('switch') as HTMLButtonElement).disabled).toBe(true)
    expect(screen.getByRole('note').textContent).toContain('Start serving at least one model')
  })

  it('enables the toggle once a model serves', () => {
    state.records = [record({ is_downloaded: true, is_serving: true, tokens_per_second: 12.34 })]
    render(withProviders(<EditNodeBody node={node} />))
    expect((screen.getByRole('switch') as HTMLButtonElement).disabled).toBe(false)
    expect(screen.queryByRole('note')).toBeNull()
    expect(screen.getByText(/12\.3 tok\/s/)).toBeTruthy()
    expect(screen.getByRole('button', { name: 'Stop Serving' })).toBeTruthy()
  })

  it('shows Download with the size in GB, and a percent bar while downloading', () => {
    render(withProviders(<EditNodeBody node={node} />))
    expect(screen.getByText('1.3 GB')).toBeTruthy()
    fireEvent.click(screen.getByRole('button', { name: 'Download' }))
    expect(state.mutate.mock.calls[0][0]).toEqual({
      kind: 'download',
      modelId: 'm1',
      recordId: undefined,
    })
    cleanup()
    state.records = [record({ download_progress: '37.6' })]
    render(withProviders(<EditNodeBody node={node} />))
    expect(screen.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('38')
    expect(screen.getByRole('button', { name: 'Cancel' })).toBeTruthy()
  })

  it('downloads again on the record a cancelled download left', () => {
    state.records = [record({ requested_download: false, download_progress: '40' })]
    render(withProviders(<EditNodeBody node={node} />))
    fireEvent.click(screen.getByRole('button', { name: 'Download' }))
    expect(state.mutate.mock.calls[0][0]).toEqual({
      kind: 'download',
      modelId: 'm1',
      recordId: 'nm1',
    })
  })

  it('shows a failed download with its reason, Retry and Remove, and no spinner', () => {
    state.records = [
      record({
        download_progress: '12',
        error_message: 'Download failed: The model source could not be reached. Retrying in 20 s.',
      }),
    ]
    render(withProviders(<EditNodeBody node={node} />))
    expect(screen.getByText('Download failed at 12%')).toBeTruthy()
    expect(screen.getByRole('alert').textContent).toContain('could not be reached')
    expect(screen.queryByRole('progressbar')).toBeNull()
    fireEvent.click(screen.getByRole('button', { name: 'Retry' }))
    fireEvent.click(screen.getByRole('button', { name: 'Remove' }))
    expect(state.mutate.mock.calls.map((c) => c[0])).toEqual([
      { kind: 'retry', recordId: 'nm1' },
      { kind: 'remove', recordId: 'nm1' },
    ])
  })

  it('offers Retry when the node could not start serving', () => {
    state.records = [
      record({ is_downloaded: true, requested_serving: true, error_message: 'Failed to load' }),
    ]
    render(withProviders(<EditNodeBody node={node} />))
    expect(screen.getByText('Could not start serving')).toBeTruthy()
    expect(screen.queryByRole('button', { name: 'Start Serving' })).toBeNull()
    fireEvent.click(screen.getByRole('button', { name: 'Retry' }))
    expect(state.mutate.mock.calls[0][0]).toEqual({ kind: 'retry', recordId: 'nm1' })
  })

  it('never shows an offline node as serving', () => {
    state.records = [record({ is_downloaded: true, is_serving: true, tokens_per_second: 1315.7 })]
    render(withProviders(<EditNodeBody node={{ ...node, status: 'offline' }} />))
    expect(screen.queryByText(/Serving ·/)).toBeNull()
    expect(screen.getByText('Offline · serves again when the node reconnects')).toBeTruthy()
    expect(screen.getByText(/This node is offline/)).toBeTruthy()
  })

  it("does not make an offline node's Active status look live", () => {
    state.records = [record({ is_downloaded: true, is_serving: true })]
    render(withProviders(<EditNodeBody node={{ ...node, is_active: true, status: 'offline' }} />))
    const toggle = screen.getByRole('switch')
    expect(toggle.className).not.toContain('bg-emerald')
    expect(toggle.getAttribute('aria-describedby')).toBeTruthy()
    expect(screen.getByText('Active · offline: takes no requests until it reconnects')).toBeTruthy()
    cleanup()
    render(withProviders(<EditNodeBody node={{ ...node, is_active: true }} />))
    expect(screen.getByRole('switch').className).toContain('bg-emerald')
    expect(screen.getByText('Active')).toBeTruthy()
  })

  it('deletes a model only after the in-app confirmation, with the spec text', async () => {
    const native = vi.spyOn(window, 'confirm')
    state.records = [record({ is_downloaded: true })]
    render(withProviders(<EditNodeBody node={node} />))
    fireEvent.click(screen.getByRole('button', { name: 'Delete' }))
    let dialog = await screen.findByRole('alertdialog')
    expect(
      within(dialog).getByText(
        'Are you sure you want to delete this model? This will remove the downloaded files from your node.',
      ),
    ).toBeTruthy()
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }))
    await vi.waitFor(() => expect(screen.queryByRole('alertdialog')).toBeNull())
    expect(state.mutate).not.toHaveBeenCalled()
    fireEvent.click(screen.getByRole('button', { name: 'Delete' }))
    dialog = await screen.findByRole('alertdialog')
    fireEvent.click(within(dialog).getByRole('button', { name: 'Delete' }))
    await vi.waitFor(() => expect(state.mutate).toHaveBeenCalledTimes(1))
    expect(state.mutate.mock.calls[0][0]).toEqual({ kind: 'delete', recordId: 'nm1' })
    expect(native).not.toHaveBeenCalled()
    native.mockRestore()
  })

  it('marks models too large for the memory the node reported', () => {
    render(
      withProviders(<EditNodeBody node={{ ...node, hardware: { memory_bytes: 1024 ** 3 } }} />),
    )
    const note = screen
      .getAllByRole('note')
      .find((n) => n.textContent?.startsWith('Too large for this node'))
    expect(note?.textContent).toBe(
      'Too large for this node: needs about 2.0 GB of memory; it reports 1.0 GB RAM.',
    )
    cleanup()
    render(
      withProviders(
        <EditNodeBody node={{ ...node, hardware: { memory_bytes: 16 * 1024 ** 3 } }} />,
      ),
    )
    expect(screen.queryByText(/Too large for this node/)).toBeNull()
  })

  it("marks a model whose size is not pinned yet by the model card's approximate size", () => {
    state.extraModels = [
      {
        id: 'm2',
        name: 'qwen2.5-7b-instruct',
        display_name: 'Qwen2.5 7B Instruct',
        file_size_bytes: 0,
        approx_size_bytes: 4.68e9,
      },
    ]
    render(
      withProviders(<EditNodeBody node={{ ...node, hardware: { memory_bytes: 4 * 1024 ** 3 } }} />),
    )
    const row = screen.getByText('Qwen2.5 7B Instruct').closest('li')!
    expect(within(row).getByText('about 4.4 GB')).toBeTruthy()
    expect(within(row).getByRole('note').textContent).toBe(
      'Too large for this node: needs about 5.7 GB of memory; it reports 4.0 GB RAM.',
    )
  })
})
