/** @module Query and mutation hooks of the chat screen (spec §7), over the PocketBase SDK. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useAuth } from '../../context/auth-context.tsx'
import { pb } from '../../lib/pb.ts'
import {
  toChatModel,
  type AvailableModelRecord,
  type ConversationRecord,
  type RequestRecord,
} from './chat-types.ts'

export const chatKeys = {
  conversations: (userId: string) => ['conversations', userId] as const,
  models: ['available_models'] as const,
  history: (conversationId: string) => ['requests', 'history', conversationId] as const,
  config: ['config'] as const,
}

/** The sidebar list: -last_message_at, 50 per page, own user only, every 30 s. */
export function useConversations() {
  const { user } = useAuth()
  return useQuery({
    queryKey: chatKeys.conversations(user?.id ?? ''),
    enabled: !!user,
    refetchInterval: 30_000,
    queryFn: async () => {
      // skipTotal: the sidebar shows no totals, and counting is most of the query's cost.
      const list = await pb.collection('conversations').getList<ConversationRecord>(1, 50, {
        skipTotal: true,
        sort: '-last_message_at,-created',
        filter: pb.filter('user = {:user}', { user: user!.id }),
      })
      return list.items
    },
  })
}

/** Available models sorted sort_order then name, fetched 500 at a time, every 3 s. */
export function useAvailableModels() {
  return useQuery({
    queryKey: chatKeys.models,
    refetchInterval: 3_000,
    queryFn: async () => {
      const records = await pb
        .collection('available_models')
        .getFullList<AvailableModelRecord>({ sort: 'sort_order,name', batch: 500 })
      return records.map(toChatModel)
    },
  })
}

/** Conversation history: requests by created, filtered by conversation and user, the latest 50 items. */
export function useConversationHistory(conversationId: string | null) {
  const { user } = useAuth()
  return useQuery({
    queryKey: chatKeys.history(conversationId ?? ''),
    enabled: !!conversationId && !!user,
    queryFn: async () => {
      // The newest 50, shown oldest first: a long conversation opens at its latest turns.
      const list = await pb.collection('requests').getList<RequestRecord>(1, 50, {
        skipTotal: true,
        sort: '-created',
        filter: pb.filter('conversation = {:c} && user = {:u}', { c: conversationId, u: user!.id }),
      })
      return list.items.reverse()
    },
  })
}

/** The default temperature from the config record (0.7 when missing). */
export function useDefaultTemperature(): number {
  const { data } = useQuery({
    queryKey: chatKeys.config,
    staleTime: 60_000,
    queryFn: async () => {
      const list = await pb.collection('config').getList<{ default_temperature?: number }>(1, 1)
      return list.items[0] ?? null
    },
  })
  const value = data?.default_temperature
  return typeof value === 'number' && value >= 0 && value <= 2 ? value : 0.7
}

/** Create, rename, change model, delete: failures are only logged (spec §8). */
export function useConversationMutations() {
  const queryClient = useQueryClient()
  const { user } = useAuth()
  const key = chatKeys.conversations(user?.id ?? '')
  const invalidate = () => queryClient.invalidateQueries({ queryKey: ['conversations'] })
  // Put the server's answer in the cache at once so the header and sidebar do not wait for the
  // refetch that follows.
  const upsert = (record: ConversationRecord) =>
    queryClient.setQueryData<ConversationRecord[]>(key, (list = []) =>
      list.some((c) => c.id === record.id)
        ? list.map((c) => (c.id === record.id ? record : c))
        : [record, ...list],
    )

  const create = useMutation({
    mutationFn: (model: string) =>
      pb.collection('conversations').create<ConversationRecord>({ model, title: 'New Chat' }),
    onSuccess: upsert,
    onSettled: invalidate,
    onError: (err) => console.error('Failed to create conversation', err),
  })
  const update = useMutation({
    mutationFn: ({ id, ...body }: { id: string; title?: string; model?: string }) =>
      pb.collection('conversations').update<ConversationRecord>(id, body),
    onSuccess: upsert,
    onSettled: invalidate,
    onError: (err) => console.error('Failed to update conversation', err),
  })
  const remove = useMutation({
    mutationFn: (id: string) => pb.collection('conversations').delete(id),
    onSuccess: (_ok, id) =>
      queryClient.setQueryData<ConversationRecord[]>(key, (list = []) => list.filter((c) => c.id !== id)),
    onSettled: invalidate,
    onError: (err) => console.error('Failed to delete conversation', err),
  })
  return { create, update, remove }
}
