import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { withProviders } from '../../../test/providers.tsx'
import type { RequestRecord } from '../chat-types.ts'
import { AssistantReply, type AssistantReplyProps } from './assistant-reply.tsx'

const retry = vi.hoisted(() => vi.fn())
vi.mock('../../../lib/api.ts', () => ({ retryRequest: retry }))
const getOne = vi.hoisted(() => vi.fn())
vi.mock('../../../lib/pb.ts', () => ({ pb: { collection: () => ({ getOne }) } }))

const base: RequestRecord = {
  id: 'r1',
  conversation: 'c1',
  prompt: 'hi',
  model: 'm',
  status: 'pending',
  response: '',
  tokens_input: 0,
  tokens_output: 0,
  error_message: '',
  can_retry: false,
  is_partial: false,
  created: '',
}

function show(props: Partial<AssistantReplyProps>) {
  const all: AssistantReplyProps = {
    live: true,
    showCosts: true,
    canRegenerate: false,
    onRegenerate: () => {},
    ...props,
  }
  const view = render(withProviders(<AssistantReply {...all} />))
  return {
    ...view,
    update: (next: Partial<AssistantReplyProps>) =>
      view.rerender(withProviders(<AssistantReply {...all} {...next} />)),
  }
}

describe('AssistantReply', () => {
  afterEach(() => {
    cleanup()
    retry.mockReset()
    getOne.mockReset()
  })

  it('shows Thinking..., types out the streamed reply, then its cost in tokens', async () => {
    const { update } = show({ record: base })
    expect(screen.getByText('Thinking...')).toBeTruthy()
    update({ record: { ...base, status: 'processing', response: 'Hello', is_partial: true } })
    expect(await screen.findByText(/Hel/)).toBeTruthy()
    update({
      record: {
        ...base,
        status: 'completed',
        response: 'Hello world',
        tokens_input: 3,
        tokens_output: 4,
      },
    })
    expect(await screen.findByText('Cost: 7 tokens')).toBeTruthy()
    expect(screen.getByText('Hello world')).toBeTruthy()
  })

  it('keeps a stopped answer: its text, Stopped, its cost; no failure and no Retry', async () => {
    const onRegenerate = vi.fn()
    const { update } = show({
      record: { ...base, status: 'processing', response: 'Once upon', is_partial: true },
      canRegenerate: true,
      onRegenerate,
    })
    update({
      record: {
        ...base,
        status: 'cancelled',
        response: 'Once upon a',
        tokens_input: 4,
        tokens_output: 2,
        cost: 6,
      },
    })
    expect(await screen.findByText('Cost: 6 tokens')).toBeTruthy()
    expect(screen.getByText('Once upon a')).toBeTruthy()
    expect(screen.getByText('Stopped')).toBeTruthy()
    expect(screen.getByText(/6 credits charged/)).toBeTruthy()
    expect(screen.queryByRole('alert')).toBeNull()
    expect(screen.queryByRole('button', { name: /Retry/ })).toBeNull()
    fireEvent.click(screen.getByRole('button', { name: 'Regenerate answer' }))
    expect(onRegenerate).toHaveBeenCalledTimes(1)
  })

  it('says a request stopped before any text was written cost nothing, without a spinner', () => {
    show({ live: false, record: { ...base, status: 'cancelled' } })
    expect(screen.getByText('Stopped')).toBeTruthy()
    expect(screen.getByText(/Nothing was charged/)).toBeTruthy()
    expect(screen.queryByText('Thinking...')).toBeNull()
    expect(screen.queryByRole('alert')).toBeNull()
    expect(screen.queryByRole('button', { name: /Retry/ })).toBeNull()
  })

  it('shows the credits actually charged beside the tokens when the server reports them', async () => {
    show({
      live: false,
      record: {
        ...base,
        status: 'completed',
        response: 'Done',
        tokens_input: 100,
        tokens_output: 218,
        cost: 477,
      },
    })
    expect(await screen.findByText('Cost: 318 tokens')).toBeTruthy()
    expect(screen.getByText('· 477 credits charged')).toBeTruthy()
  })

  it('hides the cost when showCosts is off', async () => {
    show({
      live: false,
      showCosts: false,
      record: { ...base, status: 'completed', response: 'Done' },
    })
    expect(await screen.findByText('Done')).toBeTruthy()
    expect(screen.queryByText(/Cost:/)).toBeNull()
  })

  it('offers Copy always and Regenerate only on the last answer', async () => {
    const onRegenerate = vi.fn()
    const record = { ...base, status: 'completed', response: 'Done' }
    const { update } = show({ live: false, record, onRegenerate })
    expect(await screen.findByRole('button', { name: 'Copy answer' })).toBeTruthy()
    expect(screen.queryByRole('button', { name: 'Regenerate answer' })).toBeNull()
    update({ canRegenerate: true })
    fireEvent.click(screen.getByRole('button', { name: 'Regenerate answer' }))
    expect(onRegenerate).toHaveBeenCalledWith(record)
  })

  it('shows a failed stream as an error bubble', () => {
    const { update } = show({ record: base })
    update({ record: { ...base, status: 'failed' } })
    expect(screen.getByText('Request failed - please try again')).toBeTruthy()
    expect(screen.getByText('An error occurred while processing your request')).toBeTruthy()
    expect(screen.queryByRole('button', { name: 'Retry' })).toBeNull()
  })

  it("shows a failed history item with Retry, and 'Retry failed: {message}' in a toast", async () => {
    retry.mockRejectedValueOnce(new Error('No nodes online'))
    show({ live: false, record: { ...base, status: 'failed', can_retry: true } })
    expect(screen.getByText('Request Failed')).toBeTruthy()
    expect(screen.getByText('Request failed')).toBeTruthy()
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Retry' })))
    expect(retry).toHaveBeenCalledWith('r1')
    const toast = await screen.findByText('Retry failed: No nodes online')
    expect(toast.closest('li')).not.toBeNull()
  })

  it("says 'Retry failed. Please try again.' when the refusal has no message", async () => {
    retry.mockResolvedValueOnce({ status: 'error', message: '' })
    show({ live: false, record: { ...base, status: 'failed', can_retry: true } })
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Retry' })))
    expect(await screen.findByText('Retry failed. Please try again.')).toBeTruthy()
  })

  it('types the retried answer out when it streams in', async () => {
    retry.mockResolvedValueOnce({ status: 'success', message: 'queued' })
    getOne.mockResolvedValueOnce({ ...base, status: 'pending' })
    const failed = { ...base, status: 'failed', can_retry: true, error_message: 'boom' }
    const { update } = show({ live: false, record: failed })
    expect(screen.getByText('boom')).toBeTruthy()
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Retry' })))
    expect(getOne).toHaveBeenCalledWith('r1')
    update({ record: { ...base, status: 'pending' } })
    expect(screen.getByText('Thinking...')).toBeTruthy()
    update({
      record: { ...base, status: 'processing', response: 'A long answer here', is_partial: true },
    })
    // Typing out (live again): the bubble is busy and shows only part of the text at first.
    const bubble = document.querySelector('[aria-busy="true"]')
    expect(bubble).not.toBeNull()
    expect(within(bubble as HTMLElement).queryByText('A long answer here')).toBeNull()
  })

  it("shows a send failure as 'Error: {message}'", () => {
    show({ sendError: 'Error: Insufficient credits' })
    expect(screen.getByRole('alert').textContent).toContain('Error: Insufficient credits')
  })
})
