/**
 * @module A conversation's history: the newest 50 requests first (spec §9), older pages of 50
 * when the reader scrolls up, and one writer for records that arrive live.
 */
import {
  infiniteQueryOptions,
  useInfiniteQuery,
  type InfiniteData,
  type QueryClient,
} from '@tanstack/react-query'
import { useAuth } from '../../context/auth-context.tsx'
import { pb } from '../../lib/pb.ts'
import { isNewer, type RequestRecord } from './chat-types.ts'
import { takeBoot } from '../../lib/boot-results.ts'
import { HISTORY_PAGE, historyListQuery, type HistoryCursor } from './chat-requests.ts'
import { chatKeys } from './conversations-api.ts'

/** One page, newest first; `more` when an older page may exist. */
export interface HistoryPage {
  items: RequestRecord[]
  more: boolean
}

export type HistoryData = InfiniteData<HistoryPage, unknown>

function toPage(items: RequestRecord[]): HistoryPage {
  return { items, more: items.length === HISTORY_PAGE }
}

/** The history query of one conversation (shared by the screen and the route's prefetch). */
export function historyQuery(conversationId: string, userId: string) {
  return infiniteQueryOptions({
    queryKey: chatKeys.history(conversationId),
    initialPageParam: null as HistoryCursor,
    queryFn: async ({ pageParam }): Promise<HistoryPage> => {
      // The first page may already be on its way (boot.ts asked before the app had loaded).
      const early = pageParam ? undefined : takeBoot(`history:${conversationId}`)
      const answer = await early?.catch(() => null)
      if (answer?.ok) return toPage((answer.body as { items: RequestRecord[] }).items)
      const q = historyListQuery(conversationId, userId, pageParam)
      const list = await pb.collection('requests').getList<RequestRecord>(q.page, q.perPage, {
        skipTotal: q.skipTotal,
        sort: q.sort,
        filter: q.filter,
      })
      return toPage(list.items)
    },
    getNextPageParam: (last): HistoryCursor | undefined => {
      const oldest = last.items.at(-1)
      return last.more && oldest ? { created: oldest.created, id: oldest.id } : undefined
    },
  })
}

/** `pollMs`: refetch at this interval (when realtime is down and an answer is still coming). */
export function useConversationHistory(
  conversationId: string | null,
  pollMs: number | false = false,
) {
  const { user } = useAuth()
  return useInfiniteQuery({
    ...historyQuery(conversationId ?? '', user?.id ?? ''),
    enabled: !!conversationId && !!user,
    refetchInterval: pollMs,
  })
}

/** Every loaded record, oldest first. */
export function historyRecords(data: HistoryData | undefined): RequestRecord[] {
  if (!data) return []
  const out: RequestRecord[] = []
  for (let p = data.pages.length - 1; p >= 0; p--) {
    const items = data.pages[p].items
    for (let i = items.length - 1; i >= 0; i--) out.push(items[i])
  }
  return out
}

/**
 * Applies a record that arrived live (or was read once) to the cached history: replaces it where
 * it is, adds a new one as the newest, removes a deleted or replaced one. Untouched records keep
 * their identity, so only the changed message renders again.
 */
export function writeHistory(
  queryClient: QueryClient,
  conversationId: string,
  record: RequestRecord,
  action: 'create' | 'update' | 'delete',
) {
  queryClient.setQueryData<HistoryData>(chatKeys.history(conversationId), (data) => {
    if (!data) return data
    const gone = action === 'delete' || !!record.replaced_by
    let found = false
    const pages = data.pages.map((page) => {
      const i = page.items.findIndex((r) => r.id === record.id)
      if (i === -1) return page
      found = true
      if (gone) return { ...page, items: page.items.filter((r) => r.id !== record.id) }
      if (!isNewer(record, page.items[i])) return page
      const items = page.items.slice()
      items[i] = { ...page.items[i], ...record }
      return { ...page, items }
    })
    if (found) return { ...data, pages }
    if (gone || data.pages.length === 0) return data
    const [first, ...rest] = data.pages
    return { ...data, pages: [{ ...first, items: [record, ...first.items] }, ...rest] }
  })
}
