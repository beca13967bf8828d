import { QueryClient } from '@tanstack/react-query'
import { describe, expect, it } from 'vitest'
import type { ConversationRecord, RequestRecord } from './chat-types.ts'
import { chatKeys, sortConversations } from './conversations-api.ts'
import { historyRecords, writeHistory, type HistoryData } from './history-api.ts'

const rec = (id: string, over: Partial<RequestRecord> = {}): RequestRecord => ({
  id,
  conversation: 'c1',
  prompt: id,
  model: 'm',
  status: 'completed',
  response: 'r',
  tokens_input: 0,
  tokens_output: 0,
  error_message: '',
  can_retry: false,
  is_partial: false,
  created: '',
  updated: '2026-01-01 00:00:00.000Z',
  ...over,
})

function cache(pages: RequestRecord[][]) {
  const qc = new QueryClient()
  qc.setQueryData<HistoryData>(chatKeys.history('c1'), {
    pages: pages.map((items) => ({ items, more: false })),
    pageParams: pages.map(() => null),
  })
  const read = () =>
    historyRecords(qc.getQueryData<HistoryData>(chatKeys.history('c1'))).map((r) => r.id)
  return { qc, read, data: () => qc.getQueryData<HistoryData>(chatKeys.history('c1'))! }
}

describe('the history cache', () => {
  it('lists pages (newest first each) oldest first', () => {
    expect(
      cache([
        [rec('d'), rec('c')],
        [rec('b'), rec('a')],
      ]).read(),
    ).toEqual(['a', 'b', 'c', 'd'])
  })
  it('adds a new request as the newest and leaves the other records untouched', () => {
    const { qc, read, data } = cache([[rec('b'), rec('a')]])
    const before = data().pages[0].items[1]
    writeHistory(qc, 'c1', rec('c', { status: 'pending' }), 'create')
    expect(read()).toEqual(['a', 'b', 'c'])
    expect(data().pages[0].items[2]).toBe(before)
  })
  it('takes out deleted and replaced (regenerated) requests', () => {
    const { qc, read } = cache([[rec('b'), rec('a')]])
    writeHistory(qc, 'c1', rec('b', { replaced_by: 'z' }), 'update')
    writeHistory(qc, 'c1', rec('a'), 'delete')
    expect(read()).toEqual([])
  })
  it('ignores a late partial event after the final record, but takes a retry written later', () => {
    const { qc, data } = cache([[rec('a', { status: 'completed', response: 'whole answer' })]])
    writeHistory(
      qc,
      'c1',
      rec('a', { status: 'processing', response: 'whole', is_partial: true }),
      'update',
    )
    expect(data().pages[0].items[0]).toMatchObject({
      status: 'completed',
      response: 'whole answer',
    })
    writeHistory(
      qc,
      'c1',
      rec('a', { status: 'pending', response: '', updated: '2026-01-01 00:00:05.000Z' }),
      'update',
    )
    expect(data().pages[0].items[0]).toMatchObject({ status: 'pending', response: '' })
  })
})

describe('sortConversations', () => {
  const conv = (id: string, last: string, created: string) =>
    ({ id, last_message_at: last, created }) as ConversationRecord
  it('puts the latest activity first, and a conversation without messages by its creation', () => {
    const list = [
      conv('old', '2026-01-01 00:00:00.000Z', '2025-12-01 00:00:00.000Z'),
      conv('new-empty', '', '2026-02-01 00:00:00.000Z'),
      conv('recent', '2026-01-15 00:00:00.000Z', '2025-12-02 00:00:00.000Z'),
    ]
    expect(sortConversations(list).map((c) => c.id)).toEqual(['new-empty', 'recent', 'old'])
  })
})
