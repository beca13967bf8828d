import { cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ChatFooter } from './chat-footer.tsx'

const quote = { available: 446.5, estimated_input: 2, max_cost: 258, output_cap: 256, min_cost: 18 }

describe('ChatFooter', () => {
  afterEach(cleanup)

  it("shows 'Tokens available: N' rounded as the server's refusal rounds it, and the toggle", () => {
    const onToggle = vi.fn()
    render(
      <ChatFooter
        available={446.5}
        draft=""
        quote={undefined}
        showCosts
        onToggleCosts={onToggle}
      />,
    )
    expect(screen.getByText('Tokens available: 447')).toBeTruthy()
    fireEvent.click(screen.getByRole('button', { name: 'Hide costs' }))
    expect(onToggle).toHaveBeenCalled()
    expect(screen.queryByTestId('send-estimate')).toBeNull()
  })
  it('while typing: the input estimate and the most this message can cost', () => {
    render(
      <ChatFooter
        available={1000}
        draft="Hello there!"
        quote={quote}
        showCosts
        onToggleCosts={() => {}}
      />,
    )
    expect(screen.getByText('~3 input tokens')).toBeTruthy()
    expect(screen.getByText('· at most 258 credits for this message')).toBeTruthy()
  })
  it('hides the price with costs hidden, but always says when the balance cannot pay', () => {
    const { rerender } = render(
      <ChatFooter
        available={1000}
        draft="Hello"
        quote={quote}
        showCosts={false}
        onToggleCosts={() => {}}
      />,
    )
    expect(screen.queryByText(/at most/)).toBeNull()
    rerender(
      <ChatFooter
        available={10}
        draft="Hello"
        quote={{ ...quote, available: 10, max_cost: null, output_cap: 0, min_cost: 17.5 }}
        showCosts={false}
        onToggleCosts={() => {}}
      />,
    )
    expect(screen.getByText('Not enough credits: at least 18 needed')).toBeTruthy()
  })
  it('says when the balance pays only for a shorter answer, and how long', () => {
    const { rerender } = render(
      <ChatFooter
        available={40}
        draft="Hello"
        quote={{ ...quote, available: 40, max_cost: 40, output_cap: 38, max_output: 256 }}
        showCosts={false}
        onToggleCosts={() => {}}
      />,
    )
    expect(
      screen.getByText('· Your balance pays for a shorter answer: up to 38 tokens'),
    ).toBeTruthy()
    rerender(
      <ChatFooter
        available={1000}
        draft="Hello"
        quote={{ ...quote, max_output: 256 }}
        showCosts={false}
        onToggleCosts={() => {}}
      />,
    )
    expect(screen.queryByText(/shorter answer/)).toBeNull()
  })
})
