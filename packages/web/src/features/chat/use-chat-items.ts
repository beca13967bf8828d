import { useCallback, useMemo, useRef, useState } from 'react'
import type { RequestRecord } from './chat-types.ts'

/** One exchange: the user's prompt and the assistant's reply to it. */
export interface ChatItem {
  key: string
  prompt: string
  requestId?: string
  record?: RequestRecord
  sendError?: string
  /** Started in this visit (or first seen unfinished): the reply types out. */
  live: boolean
}

/** A message sent in this visit, before (or while) history knows about it. */
export interface PendingSend {
  key: string
  conversationId: string
  prompt: string
  requestId?: string
  sendError?: string
  /** Ids of the records history held when the send started. */
  known: ReadonlySet<string>
}

/**
 * Merges loaded history with this visit's sends. A send keeps its key once history holds its
 * record, so its reply stays mounted and the typing animation carries on. The record can arrive
 * over realtime before the send call answers with its id: a new record with the same prompt,
 * not yet claimed, is the send's.
 */
export function mergeChatItems(
  conversationId: string | null,
  history: RequestRecord[],
  pending: PendingSend[],
  /** Request ids history has held at some point: a send whose record left it (deleted, replaced
   * by a regenerated answer) is gone, not waiting. */
  seen: ReadonlySet<string> = new Set(),
): ChatItem[] {
  if (!conversationId) return []
  const mine = pending.filter((p) => p.conversationId === conversationId)
  const claims = new Map<string, PendingSend>()
  for (const p of mine) if (p.requestId) claims.set(p.requestId, p)
  for (const p of mine) {
    if (p.requestId || p.sendError) continue
    const match = history.find(
      (r) => !p.known.has(r.id) && !claims.has(r.id) && r.prompt === p.prompt,
    )
    if (match) claims.set(match.id, p)
  }
  const shown = new Set<string>()
  const items: ChatItem[] = history.map((record) => {
    const p = claims.get(record.id)
    if (p) shown.add(p.key)
    return {
      key: p?.key ?? record.id,
      prompt: record.prompt,
      requestId: record.id,
      record,
      live: !!p,
    }
  })
  for (const p of mine) {
    if (shown.has(p.key) || (p.requestId && seen.has(p.requestId))) continue
    items.push({
      key: p.key,
      prompt: p.prompt,
      requestId: p.requestId,
      sendError: p.sendError,
      live: true,
    })
  }
  return items
}

/** State of this visit's sends plus the merged list for the open conversation. */
export function useChatItems(conversationId: string | null, history: RequestRecord[]) {
  const [pending, setPending] = useState<PendingSend[]>([])
  const seen = useRef(new Set<string>())
  const items = useMemo(() => {
    for (const r of history) seen.current.add(r.id)
    return mergeChatItems(conversationId, history, pending, seen.current)
  }, [conversationId, history, pending])
  const add = useCallback((send: PendingSend) => setPending((list) => [...list, send]), [])
  const patch = useCallback(
    (key: string, change: Partial<PendingSend>) =>
      setPending((list) => list.map((p) => (p.key === key ? { ...p, ...change } : p))),
    [],
  )
  return { items, add, patch }
}
