import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { RequestRecord } from '../chat-types.ts'
import { AssistantReply } from './assistant-reply.tsx'

const stream = vi.hoisted(() => ({ onRecord: null as null | ((r: unknown) => void), active: false }))
vi.mock('../use-request-stream.ts', () => ({
  useRequestStream: (_id: string, active: boolean, onRecord: (r: unknown) => void) => {
    stream.active = active
    stream.onRecord = onRecord
  },
}))
const retry = vi.hoisted(() => vi.fn())
vi.mock('../../../lib/api.ts', () => ({ retryRequest: retry }))

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

describe('AssistantReply', () => {
  afterEach(() => {
    cleanup()
    vi.restoreAllMocks()
    retry.mockReset()
  })

  it('shows Thinking..., streams the reply, then its cost', async () => {
    const onSettled = vi.fn()
    render(<AssistantReply requestId="r1" live showCosts onSettled={onSettled} />)
    expect(screen.getByText('Thinking...')).toBeTruthy()
    expect(stream.active).toBe(true)
    act(() => stream.onRecord!({ ...base, status: 'processing', response: 'Hello', is_partial: true }))
    expect(await screen.findByText(/Hel/)).toBeTruthy()
    act(() => stream.onRecord!({ ...base, status: 'completed', response: 'Hello world', tokens_input: 3, tokens_output: 4 }))
    expect(await screen.findByText('Cost: 7 tokens')).toBeTruthy()
    expect(screen.getByText('Hello world')).toBeTruthy()
    expect(onSettled).toHaveBeenCalledTimes(1)
  })

  it('hides the cost when showCosts is off', async () => {
    render(
      <AssistantReply requestId="r1" record={{ ...base, status: 'completed', response: 'Done' }} live={false} showCosts={false} onSettled={() => {}} />,
    )
    expect(await screen.findByText('Done')).toBeTruthy()
    expect(screen.queryByText(/Cost:/)).toBeNull()
  })

  it('shows a failed stream as an error bubble', () => {
    render(<AssistantReply requestId="r1" live showCosts onSettled={() => {}} />)
    act(() => stream.onRecord!({ ...base, status: 'failed' }))
    expect(screen.getByText('Request failed - please try again')).toBeTruthy()
    expect(screen.getByText('An error occurred while processing your request')).toBeTruthy()
    expect(screen.queryByRole('button', { name: 'Retry' })).toBeNull()
  })

  it("shows a failed history item with Retry, and alerts when retry fails", async () => {
    const alert = vi.spyOn(window, 'alert').mockImplementation(() => {})
    retry.mockRejectedValueOnce(new Error('No nodes online'))
    render(
      <AssistantReply requestId="r1" record={{ ...base, status: 'failed', can_retry: true }} live={false} showCosts onSettled={() => {}} />,
    )
    expect(screen.getByText('Request Failed')).toBeTruthy()
    expect(screen.getByText('Request failed')).toBeTruthy()
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Retry' })))
    expect(retry).toHaveBeenCalledWith('r1')
    expect(alert).toHaveBeenCalledWith('Retry failed: No nodes online')
  })

  it('goes back to Thinking... after a successful retry', async () => {
    retry.mockResolvedValueOnce({ status: 'success', message: 'queued' })
    render(
      <AssistantReply requestId="r1" record={{ ...base, status: 'failed', can_retry: true, error_message: 'boom' }} live={false} showCosts onSettled={() => {}} />,
    )
    expect(screen.getByText('boom')).toBeTruthy()
    await act(async () => fireEvent.click(screen.getByRole('button', { name: 'Retry' })))
    expect(screen.getByText('Thinking...')).toBeTruthy()
    expect(stream.active).toBe(true)
  })

  it("shows a send failure as 'Error: {message}'", () => {
    render(<AssistantReply sendError="Error: Insufficient credits" live showCosts onSettled={() => {}} />)
    expect(screen.getByRole('alert').textContent).toContain('Error: Insufficient credits')
  })
})
