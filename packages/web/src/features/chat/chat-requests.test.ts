import { describe, expect, it } from 'vitest'
import { pb } from '../../lib/pb.ts'
import { conversationsListQuery, historyListQuery, listUrl } from './chat-requests.ts'

describe('chat list requests', () => {
  it('quote filter values as the SDK does, so boot.ts and the app ask the same thing', () => {
    const odd = 'c"1\\x'
    expect(historyListQuery(odd, 'u1').filter).toBe(
      pb.filter('conversation = {:c} && user = {:u} && replaced_by = ""', { c: odd, u: 'u1' }),
    )
    expect(conversationsListQuery(odd).filter).toBe(pb.filter('user = {:u}', { u: odd }))
    expect(
      historyListQuery('c1', 'u1', { created: '2026-01-01 00:00:00.000Z', id: 'r9' }).filter,
    ).toBe(
      pb.filter(
        'conversation = {:c} && user = {:u} && replaced_by = "" && (created < {:t} || (created = {:t} && id < {:id}))',
        { c: 'c1', u: 'u1', t: '2026-01-01 00:00:00.000Z', id: 'r9' },
      ),
    )
  })
  it('builds the records API address with every parameter encoded', () => {
    const url = new URL(listUrl('requests', historyListQuery('abc', 'u1')), 'http://x')
    expect(url.pathname).toBe('/api/collections/requests/records')
    expect(Object.fromEntries(url.searchParams)).toEqual({
      page: '1',
      perPage: '50',
      skipTotal: 'true',
      sort: '-created,-id',
      filter: 'conversation = "abc" && user = "u1" && replaced_by = ""',
    })
  })
})
