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
  sent: [] as Array<{ model_id: string; prompt: string; idempotency_key?: string }>,
  /** Sends to fail (the answer lost on the way) before they go through again. */
  failNext: 0,
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
  sendChat: async (body: { model_id: string; prompt: string; idempotency_key?: string }) => {
    state.sent.push(body)
    if (state.failNext-- > 0) throw new TypeError('Failed to fetch')
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

function sendHook(calls: { added: unknown[]; patched: unknown[] } = { added: [], patched: [] }) {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  const wrapper = ({ children }: { children: ReactNode }) => (
    <QueryClientProvider client={client}>{children}</QueryClientProvider>
  )
  const ctx: SendContext = {
    conversationId: 'c1',
    model: shown,
    temperature: 0.7,
    knownIds: () => new Set(),
    add: (send) => calls.added.push(send),
    patch: (key, change) => calls.patched.push({ key, ...change }),
    follow: () => {},
  }
  return renderHook(() => useSendMessage(ctx), { wrapper }).result
}

/** Sends `text` ('hello') and answers what the composer holds afterwards. */
async function sendHello(result: ReturnType<typeof sendHook>, text = 'hello') {
  let draft = text
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

describe('a send whose answer was lost', () => {
  beforeEach(() => {
    state.toasts = []
    state.sent = []
    state.listed = [listed(1)]
  })
  afterEach(cleanup)

  it('goes again under the same idempotency key, in the same bubble', async () => {
    const calls = { added: [] as Array<{ key: string }>, patched: [] as unknown[] }
    const result = sendHook(calls)
    state.failNext = 1
    expect(await sendHello(result)).toBe('hello')
    expect(await sendHello(result)).toBe('')
    const [first, second] = state.sent
    expect(first.idempotency_key).toMatch(/^[a-z0-9]{15}$/)
    expect(second.idempotency_key).toBe(first.idempotency_key)
    expect(calls.added).toHaveLength(1)
    expect(calls.patched).toEqual([
      {
        key: calls.added[0].key,
        sendError: expect.stringContaining('Cannot reach the Meshwork server'),
      },
      { key: calls.added[0].key, sendError: undefined },
      { key: calls.added[0].key, requestId: 'r1' },
    ])
  })

  it('another text, or the same text after a send that went through, is a new request', async () => {
    const result = sendHook()
    state.failNext = 1
    await sendHello(result, 'hello')
    await sendHello(result, 'hello there')
    await sendHello(result, 'hello there')
    const ids = state.sent.map((s) => s.idempotency_key)
    expect(new Set(ids).size).toBe(3)
  })
})
