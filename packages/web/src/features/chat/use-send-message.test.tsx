import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { act, cleanup, renderHook } from '@testing-library/react'
import type { ReactNode } from 'react'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { AvailableModelRecord, ChatModel } from './chat-types.ts'
import { unavailableText, useSendMessage, type SendContext } from './use-send-message.ts'

const state = vi.hoisted(() => ({
  /** What the server lists now; an Error makes the list fail. */
  listed: [] as unknown[] | Error,
  toasts: [] as string[],
  sent: [] as Array<{ model_id: string; prompt: string }>,
}))

vi.mock('../../lib/pb.ts', () => ({
  pb: {
    collection: () => ({
      getFullList: async () => {
        if (state.listed instanceof Error) throw state.listed
        return state.listed
      },
      getOne: async () => ({}),
    }),
  },
}))
vi.mock('../../lib/boot-results.ts', () => ({ takeBoot: () => undefined }))
vi.mock('../../lib/api.ts', () => ({
  sendChat: async (body: { model_id: string; prompt: string }) => {
    state.sent.push(body)
    return { request_id: 'r1', status: 'queued', position: 0 }
  },
  regenerateAnswer: async () => ({ request_id: 'r2' }),
}))
vi.mock('../../components/feedback/feedback-context.tsx', () => ({
  useFeedback: () => ({
    toast: (message: string) => state.toasts.push(message),
    confirm: async () => true,
  }),
}))

/** The page's list, a few seconds old: no node served the model when it was read. */
const shown: ChatModel = {
  id: 'm1',
  name: 'Stories 260K',
  description: '',
  creditMultiplier: 1,
  nodeCount: 0,
  isAvailable: false,
}
const listed = (nodeCount: number): AvailableModelRecord => ({
  id: 'm1',
  name: 'stories260K',
  display_name: 'Stories 260K',
  node_count: nodeCount,
})

function sendHook() {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  const wrapper = ({ children }: { children: ReactNode }) => (
    <QueryClientProvider client={client}>{children}</QueryClientProvider>
  )
  const ctx: SendContext = {
    conversationId: 'c1',
    model: shown,
    temperature: 0.7,
    knownIds: () => new Set(),
    add: () => {},
    patch: () => {},
    follow: () => {},
  }
  return renderHook(() => useSendMessage(ctx), { wrapper }).result
}

/** Sends 'hello' and answers what the composer holds afterwards. */
async function sendHello(result: ReturnType<typeof sendHook>) {
  let draft = 'hello'
  await act(() => result.current.send(draft, (update) => (draft = update(draft))))
  return draft
}

describe('sending to a model the page shows as unavailable', () => {
  beforeEach(() => {
    state.toasts = []
    state.sent = []
  })
  afterEach(cleanup)

  it('asks the server again, and sends when a node serves it now', async () => {
    state.listed = [listed(1)]
    const draft = await sendHello(sendHook())
    expect(state.sent).toEqual([expect.objectContaining({ model_id: 'm1', prompt: 'hello' })])
    expect(state.toasts).toEqual([])
    expect(draft).toBe('')
  })

  it('refuses with the spec text, keeping the text, when still no node serves it', async () => {
    state.listed = [listed(0)]
    const draft = await sendHello(sendHook())
    expect(state.sent).toEqual([])
    expect(state.toasts).toEqual([unavailableText('Stories 260K')])
    expect(draft).toBe('hello')
  })

  it('refuses when the list cannot be read', async () => {
    state.listed = new Error('Failed to fetch')
    const draft = await sendHello(sendHook())
    expect(state.sent).toEqual([])
    expect(state.toasts).toEqual([unavailableText('Stories 260K')])
    expect(draft).toBe('hello')
  })
})
