/**
 * @module Keeps the chat screen in step with the server over realtime, so that what happens in
 * another tab (or on another device) shows here: the user's conversations (created, renamed,
 * moved by a message, deleted) and the open conversation's requests (sent, streamed, finished).
 */
import { useQueryClient } from '@tanstack/react-query'
import { useEffect, useRef, useState } from 'react'
import { useAuth } from '../../context/auth-context.tsx'
import { pb } from '../../lib/pb.ts'
import { isTerminal, type ConversationRecord, type RequestRecord } from './chat-types.ts'
import { writeConversation } from './conversations-api.ts'
import { writeHistory } from './history-api.ts'

export type LiveState = 'connecting' | 'live' | 'down'

type Unsubscribe = () => Promise<void>

/** Subscribes and returns a cleanup that also undoes a subscription still being made. */
function subscribeSafely(
  make: () => Promise<Unsubscribe>,
  onFail: (err: unknown) => void,
): () => void {
  let cancelled = false
  let off: Unsubscribe | null = null
  make()
    .then((unsubscribe) => {
      if (cancelled) void unsubscribe().catch(() => {})
      else off = unsubscribe
    })
    .catch((err: unknown) => {
      if (!cancelled) onFail(err)
    })
  return () => {
    cancelled = true
    // Unsubscribing fails when the connection already dropped; nothing is left to clean then.
    off?.().catch(() => {})
  }
}

export interface ChatLiveOptions {
  /** The open conversation disappeared (deleted here or elsewhere). */
  onConversationGone: (id: string) => void
}

export function useChatLive(
  conversationId: string | null,
  { onConversationGone }: ChatLiveOptions,
): LiveState {
  const queryClient = useQueryClient()
  const { user } = useAuth()
  const userId = user?.id ?? ''
  const [state, setState] = useState<LiveState>('connecting')
  const goneRef = useRef(onConversationGone)
  goneRef.current = onConversationGone
  const openRef = useRef(conversationId)
  openRef.current = conversationId

  // The user's conversations, and a refetch of everything after a reconnect (events were missed).
  useEffect(() => {
    if (!userId) return
    let connects = 0
    const offConnect = subscribeSafely(
      () =>
        pb.realtime.subscribe('PB_CONNECT', () => {
          if (++connects > 1) {
            void queryClient.invalidateQueries({ queryKey: ['conversations'] })
            void queryClient.invalidateQueries({ queryKey: ['requests', 'history'] })
          }
        }),
      () => {},
    )
    const offConversations = subscribeSafely(
      () =>
        pb.collection('conversations').subscribe<ConversationRecord>('*', (e) => {
          const action = e.action === 'delete' ? 'delete' : 'upsert'
          writeConversation(queryClient, userId, e.record, action)
          if (action === 'delete' && e.record.id === openRef.current) goneRef.current(e.record.id)
        }),
      (err) => {
        console.error(
          'Realtime unavailable: the conversation list refreshes every 30 s instead',
          err,
        )
        setState('down')
      },
    )
    return () => {
      offConnect()
      offConversations()
    }
  }, [queryClient, userId])

  // The open conversation's requests.
  useEffect(() => {
    if (!userId || !conversationId) return
    setState((s) => (s === 'down' ? s : 'connecting'))
    return subscribeSafely(
      async () => {
        const off = await pb.collection('requests').subscribe<RequestRecord>(
          '*',
          (e) => {
            const action =
              e.action === 'delete' ? 'delete' : e.action === 'create' ? 'create' : 'update'
            writeHistory(queryClient, conversationId, e.record, action)
            // A new request holds credits and a finished one is charged: the footer follows.
            if (action === 'create' || isTerminal(e.record.status))
              void queryClient.invalidateQueries({ queryKey: ['user_balances'] })
          },
          { filter: pb.filter('conversation = {:c}', { c: conversationId }) },
        )
        setState('live')
        return off
      },
      (err) => {
        console.error('Realtime unavailable: polling the conversation instead', err)
        setState('down')
      },
    )
  }, [queryClient, userId, conversationId])

  return state
}
