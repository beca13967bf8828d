import { useCallback, useMemo, useState } from 'react'
import type { RequestRecord } from './chat-types.ts'
import type { ChatItem } from './components/message-list.tsx'

/** A message sent in this visit, before (or while) history knows about it. */
export interface PendingSend {
  key: string
  conversationId: string
  prompt: string
  requestId?: string
  sendError?: string
}

/**
 * Merges loaded history with this visit's sends. A send keeps its key once history returns its
 * record, so its reply component stays mounted and the typing animation carries on.
 */
export function mergeChatItems(
  conversationId: string | null,
  history: RequestRecord[],
  pending: PendingSend[],
): ChatItem[] {
  if (!conversationId) return []
  const mine = pending.filter((p) => p.conversationId === conversationId)
  const byRequest = new Map(mine.filter((p) => p.requestId).map((p) => [p.requestId!, p]))
  const historyIds = new Set(history.map((r) => r.id))
  const items: ChatItem[] = history.map((record) => {
    const p = byRequest.get(record.id)
    return { key: p?.key ?? record.id, prompt: record.prompt, requestId: record.id, record, live: !!p }
  })
  for (const p of mine) {
    if (p.requestId && historyIds.has(p.requestId)) continue
    items.push({ key: p.key, prompt: p.prompt, requestId: p.requestId, sendError: p.sendError, live: true })
  }
  return items
}

/** State of this visit's sends plus the merged list for the open conversation. */
export function useChatItems(conversationId: string | null, history: RequestRecord[] | undefined) {
  const [pending, setPending] = useState<PendingSend[]>([])
  const items = useMemo(
    () => mergeChatItems(conversationId, history ?? [], pending),
    [conversationId, history, pending],
  )
  const add = useCallback((send: PendingSend) => setPending((list) => [...list, send]), [])
  const patch = useCallback(
    (key: string, change: Partial<PendingSend>) =>
      setPending((list) => list.map((p) => (p.key === key ? { ...p, ...change } : p))),
    [],
  )
  return { items, add, patch }
}
