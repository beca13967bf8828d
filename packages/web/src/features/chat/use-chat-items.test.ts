import { describe, expect, it } from 'vitest'
import type { RequestRecord } from './chat-types.ts'
import { mergeChatItems } from './use-chat-items.ts'

const record = (id: string, conversation = 'c1'): RequestRecord => ({
  id,
  conversation,
  prompt: `p-${id}`,
  model: 'm',
  status: 'completed',
  response: 'r',
  tokens_input: 1,
  tokens_output: 2,
  error_message: '',
  can_retry: false,
  is_partial: false,
  created: '2026-01-01 00:00:00.000Z',
})

describe('mergeChatItems', () => {
  it('is empty without a conversation', () => {
    expect(mergeChatItems(null, [record('a')], [])).toEqual([])
  })
  it('appends sends that history does not know yet, for this conversation only', () => {
    const items = mergeChatItems('c1', [record('a')], [
      { key: 'k1', conversationId: 'c1', prompt: 'hello' },
      { key: 'k2', conversationId: 'c2', prompt: 'elsewhere' },
    ])
    expect(items.map((i) => i.key)).toEqual(['a', 'k1'])
    expect(items[1]).toMatchObject({ prompt: 'hello', live: true })
  })
  it('keeps the send key once history returns its record', () => {
    const items = mergeChatItems('c1', [record('a'), record('req2')], [
      { key: 'k1', conversationId: 'c1', prompt: 'p-req2', requestId: 'req2' },
    ])
    expect(items.map((i) => i.key)).toEqual(['a', 'k1'])
    expect(items[1]).toMatchObject({ live: true, requestId: 'req2' })
    expect(items[0].live).toBe(false)
  })
})
