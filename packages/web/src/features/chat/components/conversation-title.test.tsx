import { cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ConversationTitle } from './conversation-title.tsx'

function edit(onSave = vi.fn()) {
  render(<ConversationTitle title="New Chat" onSave={onSave} />)
  fireEvent.click(screen.getByRole('button', { name: 'New Chat' }))
  return { onSave, input: screen.getByRole('textbox', { name: 'Conversation title' }) }
}

describe('ConversationTitle', () => {
  afterEach(cleanup)

  it('saves in title case on Enter', () => {
    const { onSave, input } = edit()
    fireEvent.change(input, { target: { value: '  my GREAT chat ' } })
    fireEvent.keyDown(input, { key: 'Enter' })
    expect(onSave).toHaveBeenCalledWith('My Great Chat')
  })
  it('cancels on Escape', () => {
    const { onSave, input } = edit()
    fireEvent.change(input, { target: { value: 'other' } })
    fireEvent.keyDown(input, { key: 'Escape' })
    expect(onSave).not.toHaveBeenCalled()
    expect(screen.getByRole('button', { name: 'New Chat' })).toBeTruthy()
  })
  it('saves on blur and ignores empty or unchanged titles', () => {
    const { onSave, input } = edit()
    fireEvent.change(input, { target: { value: 'new chat' } })
    fireEvent.blur(input)
    expect(onSave).not.toHaveBeenCalled()
    fireEvent.click(screen.getByRole('button', { name: 'New Chat' }))
    const again = screen.getByRole('textbox', { name: 'Conversation title' })
    fireEvent.change(again, { target: { value: '   ' } })
    fireEvent.blur(again)
    expect(onSave).not.toHaveBeenCalled()
    fireEvent.click(screen.getByRole('button', { name: 'New Chat' }))
    const third = screen.getByRole('textbox', { name: 'Conversation title' })
    fireEvent.change(third, { target: { value: 'trip plans' } })
    fireEvent.blur(third)
    expect(onSave).toHaveBeenCalledWith('Trip Plans')
  })
})
