import { cleanup, fireEvent, render, screen, within } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createMemoryRouter, RouterProvider } from 'react-router'
import type { NodeRecord } from '../../lib/node-records.ts'
import { withProviders } from '../../test/providers.tsx'
import NodesPage from './nodes-page.tsx'

const state = vi.hoisted(() => ({
  nodes: undefined as NodeRecord[] | undefined,
  loading: true,
  paused: [] as boolean[],
  deleteMutate: vi.fn(),
}))

vi.mock('./nodes-api.ts', () => ({
  useMyNodes: (paused: boolean) => {
    state.paused.push(paused)
    return { data: state.nodes, isLoading: state.loading }
  },
  useDeleteNode: () => ({ mutate: state.deleteMutate }),
}))
vi.mock('./components/edit-node-dialog.tsx', () => ({ EditNodeDialog: () => <p>edit dialog</p> }))

const node: NodeRecord = {
  id: 'n1',
  user: 'u1',
  device_name: 'studio',
  status: 'online',
  total_requests: 5,
  reputation_score: 1,
  is_active: true,
  last_seen: '',
  servingModels: [],
}

function renderPage() {
  const router = createMemoryRouter([{ path: '/nodes', element: <NodesPage /> }], {
    initialEntries: ['/nodes'],
  })
  render(withProviders(<RouterProvider router={router} />))
}

describe('NodesPage', () => {
  afterEach(() => {
    cleanup()
    vi.restoreAllMocks()
    Object.assign(state, { nodes: undefined, loading: true, paused: [] })
    state.deleteMutate.mockReset()
  })

  it('shows the loading text, then the empty state', () => {
    renderPage()
    expect(screen.getByText('Loading your nodes...')).toBeTruthy()
    cleanup()
    Object.assign(state, { nodes: [], loading: false })
    renderPage()
    expect(screen.getByText('No nodes yet')).toBeTruthy()
    expect(screen.getByText('Get started by setting up your first node')).toBeTruthy()
  })

  it('asks in an in-app dialog before deleting, and reports a failure in a toast', async () => {
    Object.assign(state, { nodes: [node], loading: false })
    const native = vi.spyOn(window, 'confirm')
    renderPage()
    const question = 'Are you sure you want to delete "studio"? This action cannot be undone.'
    fireEvent.click(screen.getByRole('button', { name: 'Delete studio' }))
    let dialog = await screen.findByRole('alertdialog')
    expect(within(dialog).getByText(question)).toBeTruthy()
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }))
    await vi.waitFor(() => expect(screen.queryByRole('alertdialog')).toBeNull())
    expect(state.deleteMutate).not.toHaveBeenCalled()
    fireEvent.click(screen.getByRole('button', { name: 'Delete studio' }))
    dialog = await screen.findByRole('alertdialog')
    fireEvent.click(within(dialog).getByRole('button', { name: 'Delete' }))
    await vi.waitFor(() => expect(state.deleteMutate).toHaveBeenCalledTimes(1))
    const [id, options] = state.deleteMutate.mock.calls[0]
    expect(id).toBe('n1')
    options.onError(new Error('forbidden'))
    expect(await screen.findByText('Failed to delete node: forbidden')).toBeTruthy()
    expect(native).not.toHaveBeenCalled()
  })

  it('pauses the list refresh while the edit dialog is open', () => {
    Object.assign(state, { nodes: [node], loading: false })
    renderPage()
    expect(state.paused.at(-1)).toBe(false)
    fireEvent.click(screen.getByRole('button', { name: 'Edit studio' }))
    expect(screen.getByText('edit dialog')).toBeTruthy()
    expect(state.paused.at(-1)).toBe(true)
  })
})
