import { cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Composer } from './composer.tsx'

function setup(value: string, extra: Partial<Parameters<typeof Composer>[0]> = {}) {
  const onSend = vi.fn()
  render(
    <Composer value={value} onChange={() => {}} onSend={onSend} sending={false} empty {...extra} />,
  )
  return { onSend, box: screen.getByRole('textbox', { name: 'Message' }) }
}

describe('Composer', () => {
  afterEach(cleanup)

  it('sends on Enter but not on Shift+Enter', () => {
    const { onSend, box } = setup('hello')
    fireEvent.keyDown(box, { key: 'Enter', shiftKey: true })
    expect(onSend).not.toHaveBeenCalled()
    fireEvent.keyDown(box, { key: 'Enter' })
    expect(onSend).toHaveBeenCalledTimes(1)
  })
  it('will not send whitespace, and disables the button while empty or sending', () => {
    const { onSend, box } = setup('   ')
    fireEvent.keyDown(box, { key: 'Enter' })
    expect(onSend).not.toHaveBeenCalled()
    expect(
      (screen.getByRole('button', { name: 'Send message' }) as HTMLButtonElement).disabled,
    ).toBe(true)
    cleanup()
    setup('hi', { sending: true })
    expect(
      (screen.getByRole('button', { name: 'Send message' }) as HTMLButtonElement).disabled,
    ).toBe(true)
  })
  it('shows Stop only while an answer streams, and stops once per click', () => {
    setup('')
    expect(screen.queryByRole('button', { name: 'Stop generating' })).toBeNull()
    cleanup()
    const onStop = vi.fn()
    setup('', { streaming: true, onStop })
    fireEvent.click(screen.getByRole('button', { name: 'Stop generating' }))
    expect(onStop).toHaveBeenCalledTimes(1)
    cleanup()
    setup('', { streaming: true, stopping: true, onStop })
    expect(
      (screen.getByRole('button', { name: 'Stop generating' }) as HTMLButtonElement).disabled,
    ).toBe(true)
  })
  it('switches placeholder once the conversation has messages', () => {
    const { box } = setup('')
    expect(box.getAttribute('placeholder')).toBe('What can I do for you today?')
    cleanup()
    const second = setup('', { empty: false })
    expect(second.box.getAttribute('placeholder')).toBe('Reply...')
  })
})
