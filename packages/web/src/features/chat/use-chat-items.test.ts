import { describe, expect, it } from 'vitest'
import type { RequestRecord } from './chat-types.ts'
import { mergeChatItems } from './use-chat-items.ts'

const record = (id: string, conversation = 'c1', prompt = `p-${id}`): RequestRecord => ({
  id,
  conversation,
  prompt,
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
const none = new Set<string>()

describe('mergeChatItems', () => {
  it('is empty without a conversation', () => {
    expect(mergeChatItems(null, [record('a')], [])).toEqual([])
  })
  it('appends sends that history does not know yet, for this conversation only', () => {
    const items = mergeChatItems(
      'c1',
      [record('a')],
      [
        { key: 'k1', conversationId: 'c1', prompt: 'hello', known: new Set(['a']) },
        { key: 'k2', conversationId: 'c2', prompt: 'elsewhere', known: none },
      ],
    )
    expect(items.map((i) => i.key)).toEqual(['a', 'k1'])
    expect(items[1]).toMatchObject({ prompt: 'hello', live: true })
  })
  it('keeps the send key once history returns its record', () => {
    const items = mergeChatItems(
      'c1',
      [record('a'), record('req2')],
      [
        {
          key: 'k1',
          conversationId: 'c1',
          prompt: 'p-req2',
          requestId: 'req2',
          known: new Set(['a']),
        },
      ],
    )
    expect(items.map((i) => i.key)).toEqual(['a', 'k1'])
    expect(items[1]).toMatchObject({ live: true, requestId: 'req2' })
    expect(items[0].live).toBe(false)
  })
  it('recognises its record arriving live before the send answered: one message, not two', () => {
    const items = mergeChatItems(
      'c1',
      [record('a', 'c1', 'same'), record('new', 'c1', 'same')],
      [{ key: 'k1', conversationId: 'c1', prompt: 'same', known: new Set(['a']) }],
    )
    expect(items.map((i) => i.key)).toEqual(['a', 'k1'])
    expect(items[1].record?.id).toBe('new')
  })
  it('keeps a failed send with its error', () => {
    const items = mergeChatItems(
      'c1',
      [],
      [{ key: 'k1', conversationId: 'c1', prompt: 'x', sendError: 'Error: nope', known: none }],
    )
    expect(items).toMatchObject([{ key: 'k1', sendError: 'Error: nope', live: true }])
  })
  it('drops a send whose record left the history (replaced by a regenerated answer)', () => {
    const pending = [
      { key: 'k1', conversationId: 'c1', prompt: 'p-old', requestId: 'old', known: none },
    ]
    expect(
      mergeChatItems('c1', [record('new')], pending, new Set(['old', 'new'])).map((i) => i.key),
    ).toEqual(['new'])
    // Not seen yet: still on its way.
    expect(mergeChatItems('c1', [], pending, new Set()).map((i) => i.key)).toEqual(['k1'])
  })
})
