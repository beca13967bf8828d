/**
 * @module What the chat screen will ask for, asked for as the route starts loading: in parallel
 * with the screen's code and the session refresh instead of after both. A long conversation then
 * opens in one round trip less (docs/performance.md, "Web").
 */
import type { QueryClient } from '@tanstack/react-query'
import { pb } from '../../lib/pb.ts'
import { conversationsQuery, modelsQuery } from './conversations-api.ts'
import { historyQuery } from './history-api.ts'
import { preloadMarkdown } from './markdown/markdown-loader.ts'

export function prefetchChat(queryClient: QueryClient, url: URL): void {
  // The stored session, before its refresh answers; a refused one signs out and clears the cache.
  const userId = pb.authStore.isValid ? (pb.authStore.record?.id as string | undefined) : undefined
  if (!userId) return
  const conversationId = url.searchParams.get('c')
  // The open conversation first: the server answers in the order asked.
  if (conversationId) {
    void queryClient.prefetchInfiniteQuery(historyQuery(conversationId, userId))
    // Most answers render without the full markdown renderer (simple-markdown.tsx): it is
    // brought in once the first screen is up, not while it is being built.
    whenIdle(() => void preloadMarkdown().catch(() => {}))
  }
  void queryClient.prefetchQuery(conversationsQuery(userId))
  void queryClient.prefetchQuery(modelsQuery)
}

function whenIdle(run: () => void): void {
  if (typeof requestIdleCallback === 'function') requestIdleCallback(run, { timeout: 2000 })
  else setTimeout(run, 500)
}
