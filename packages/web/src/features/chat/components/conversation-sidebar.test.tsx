import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { withProviders } from '../../../test/providers.tsx'
import type { ConversationRecord } from '../chat-types.ts'
import { ConversationSidebar, type ConversationSidebarProps } from './conversation-sidebar.tsx'

const conv: ConversationRecord = {
  id: 'c1',
  user: 'u',
  model: 'm',
  title: 'Trip',
  message_count: 1,
  last_message_at: new Date().toISOString(),
  created: new Date().toISOString(),
  updated: '',
}

function setup(over: Partial<ConversationSidebarProps> = {}) {
  const props: ConversationSidebarProps = {
    open: true,
    conversations: [conv],
    loading: false,
    error: false,
    selectedId: null,
    creating: false,
    onSelect: vi.fn(),
    onNew: vi.fn(),
    onRename: vi.fn(),
    onDelete: vi.fn(),
    onClose: vi.fn(),
    ...over,
  }
  render(withProviders(<ConversationSidebar {...props} />))
  return props
}

describe('ConversationSidebar', () => {
  afterEach(() => {
    cleanup()
    vi.restoreAllMocks()
  })

  it('shows the empty texts', () => {
    setup({ conversations: [] })
    expect(screen.getByText('No conversations yet')).toBeTruthy()
    expect(screen.getByText('Start a new chat to begin')).toBeTruthy()
  })
  it('shows the load error', () => {
    setup({ conversations: [], error: true })
    expect(screen.getByText('Failed to load conversations')).toBeTruthy()
  })
  it('lists conversations with relative dates and selects on click', () => {
    const props = setup()
    expect(screen.getByText('Today')).toBeTruthy()
    fireEvent.click(screen.getByRole('button', { name: /^Trip/ }))
    expect(props.onSelect).toHaveBeenCalledWith('c1')
  })
  it('deletes only after confirmation in an in-app dialog', async () => {
    const props = setup()
    fireEvent.click(screen.getByRole('button', { name: 'Delete Trip' }))
    const dialog = await screen.findByRole('alertdialog')
    expect(dialog.textContent).toContain('Are you sure you want to delete this conversation?')
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Cancel' })))
    expect(props.onDelete).not.toHaveBeenCalled()
    fireEvent.click(screen.getByRole('button', { name: 'Delete Trip' }))
    await act(async () => fireEvent.click(await screen.findByRole('button', { name: 'Delete' })))
    expect(props.onDelete).toHaveBeenCalledWith('c1')
  })
  it('renames with a trimmed, changed title only', () => {
    const props = setup()
    fireEvent.click(screen.getByRole('button', { name: 'Rename Trip' }))
    const input = screen.getByRole('textbox', { name: 'Conversation title' })
    fireEvent.change(input, { target: { value: ' Trip ' } })
    fireEvent.keyDown(input, { key: 'Enter' })
    expect(props.onRename).not.toHaveBeenCalled()
    fireEvent.click(screen.getByRole('button', { name: 'Rename Trip' }))
    const again = screen.getByRole('textbox', { name: 'Conversation title' })
    fireEvent.change(again, { target: { value: ' Lisbon trip ' } })
    fireEvent.keyDown(again, { key: 'Enter' })
    expect(props.onRename).toHaveBeenCalledWith('c1', 'Lisbon trip')
  })
})
