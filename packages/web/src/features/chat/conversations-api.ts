/** @module The conversation list, models and config of the chat screen (spec §7), over the SDK. */
import type { ConfigRecord, ModelRecord } from '@meshwork/protocol/records'
import {
  queryOptions,
  useMutation,
  useQuery,
  useQueryClient,
  type QueryClient,
} from '@tanstack/react-query'
import { useAuth } from '../../context/auth-context.tsx'
import { takeBoot } from '../../lib/boot-results.ts'
import { catalogueSize } from '../../lib/model-size.ts'
import { pb } from '../../lib/pb.ts'
import { conversationsListQuery, MODELS_BATCH, modelsListQuery } from './chat-requests.ts'
import { toChatModel, type AvailableModelRecord, type ConversationRecord } from './chat-types.ts'

export const chatKeys = {
  conversations: (userId: string) => ['conversations', userId] as const,
  models: ['available_models'] as const,
  modelSizes: ['models', 'sizes'] as const,
  history: (conversationId: string) => ['requests', 'history', conversationId] as const,
  config: ['config'] as const,
}

/** The sidebar's order: -last_message_at, then -created (spec §7). */
export function sortConversations(list: ConversationRecord[]): ConversationRecord[] {
  const key = (c: ConversationRecord) => c.last_message_at || c.created
  return [...list].sort((a, b) =>
    key(a) === key(b) ? (b.created > a.created ? 1 : -1) : key(b) > key(a) ? 1 : -1,
  )
}

/** Puts one conversation into the cached list (or takes it out), keeping the sidebar's order. */
export function writeConversation(
  queryClient: QueryClient,
  userId: string,
  record: ConversationRecord,
  action: 'upsert' | 'delete',
) {
  queryClient.setQueryData<ConversationRecord[]>(chatKeys.conversations(userId), (list) => {
    if (!list) return list
    const rest = list.filter((c) => c.id !== record.id)
    return action === 'delete' ? rest : sortConversations([record, ...rest])
  })
}

/** The sidebar list: -last_message_at, 50 per page, own user only, every 30 s. */
export function conversationsQuery(userId: string) {
  return queryOptions({
    queryKey: chatKeys.conversations(userId),
    refetchInterval: 30_000,
    queryFn: async () => {
      const answer = await takeBoot(`conversations:${userId}`)?.catch(() => null)
      if (answer?.ok) return (answer.body as { items: ConversationRecord[] }).items
      const q = conversationsListQuery(userId)
      // skipTotal: the sidebar shows no totals, and counting is most of the query's cost.
      const list = await pb
        .collection('conversations')
        .getList<ConversationRecord>(q.page, q.perPage, {
          skipTotal: q.skipTotal,
          sort: q.sort,
          filter: q.filter,
        })
      return list.items
    },
  })
}

export function useConversations() {
  const { user } = useAuth()
  return useQuery({ ...conversationsQuery(user?.id ?? ''), enabled: !!user })
}

/** Available models sorted sort_order then name, fetched 500 at a time, every 3 s. */
export const modelsQuery = queryOptions({
  queryKey: chatKeys.models,
  refetchInterval: 3_000,
  queryFn: async () => {
    const answer = await takeBoot('models')?.catch(() => null)
    const early = answer?.ok ? (answer.body as { items: AvailableModelRecord[] }).items : null
    // A full first batch may have more behind it: then the SDK reads them all.
    const records =
      early && early.length < MODELS_BATCH
        ? early
        : await pb
            .collection('available_models')
            .getFullList<AvailableModelRecord>({ sort: modelsListQuery.sort, batch: MODELS_BATCH })
    return records.map(toChatModel)
  },
})

export function useAvailableModels() {
  return useQuery(modelsQuery)
}

/** File sizes from the active catalogue (spec §7 "Model catalogue"), to show models in GB; asked
 * only while the model picker is shown. */
export function useModelSizes(enabled: boolean) {
  return useQuery({
    queryKey: chatKeys.modelSizes,
    enabled,
    staleTime: 5 * 60_000,
    queryFn: async () => {
      const records = await pb
        .collection('models')
        .getFullList<Pick<ModelRecord, 'id' | 'file_size_bytes' | 'approx_size_bytes'>>({
          filter: 'is_active = true',
          sort: 'sort_order',
          fields: 'id,file_size_bytes,approx_size_bytes',
          batch: 500,
        })
      return new Map(records.map((r) => [r.id, catalogueSize(r)]))
    },
  })
}

/** Whether any node is online at all (only asked while the chosen model has none). */
export function useAnyNodeOnline(enabled: boolean) {
  return useQuery({
    queryKey: ['nodes', 'online-count'],
    enabled,
    refetchInterval: 5_000,
    queryFn: async () => {
      const list = await pb
        .collection('nodes')
        .getList(1, 1, { filter: 'status = "online" || status = "busy"', fields: 'id' })
      return list.totalItems
    },
  })
}

/** The default temperature from the config record (0.7 when missing). */
export function useDefaultTemperature(): number {
  const { data } = useQuery({
    queryKey: chatKeys.config,
    staleTime: 60_000,
    queryFn: async () => {
      const list = await pb
        .collection('config')
        .getList<Pick<ConfigRecord, 'default_temperature'>>(1, 1)
      return list.items[0] ?? null
    },
  })
  const value = data?.default_temperature
  return typeof value === 'number' && value >= 0 && value <= 2 ? value : 0.7
}

type ConversationChange = { id: string; title?: string; model?: string; temperature?: number }

/** Create, rename, change model or temperature, delete: failures are only logged (spec §8). */
export function useConversationMutations() {
  const queryClient = useQueryClient()
  const { user } = useAuth()
  const userId = user?.id ?? ''
  const invalidate = () => queryClient.invalidateQueries({ queryKey: ['conversations'] })
  // The server's answer goes into the cache at once so header and sidebar need not wait.
  const upsert = (record: ConversationRecord) =>
    writeConversation(queryClient, userId, record, 'upsert')

  const create = useMutation({
    mutationFn: (body: { model: string; temperature: number }) =>
      pb.collection('conversations').create<ConversationRecord>({ ...body, title: 'New Chat' }),
    onSuccess: upsert,
    onSettled: invalidate,
    onError: (err) => console.error('Failed to create conversation', err),
  })
  const update = useMutation({
    mutationFn: ({ id, ...body }: ConversationChange) =>
      pb.collection('conversations').update<ConversationRecord>(id, body),
    // The change shows at once; the server's answer (or a refetch after a failure) settles it.
    onMutate: ({ id, ...body }) => {
      const list = queryClient.getQueryData<ConversationRecord[]>(chatKeys.conversations(userId))
      const current = list?.find((c) => c.id === id)
      if (current) upsert({ ...current, ...body })
    },
    onSuccess: upsert,
    onSettled: invalidate,
    onError: (err) => console.error('Failed to update conversation', err),
  })
  const remove = useMutation({
    mutationFn: (id: string) => pb.collection('conversations').delete(id),
    onSuccess: (_ok, id) =>
      queryClient.setQueryData<ConversationRecord[]>(chatKeys.conversations(userId), (list = []) =>
        list.filter((c) => c.id !== id),
      ),
    onSettled: invalidate,
    onError: (err) => console.error('Failed to delete conversation', err),
  })
  return { create, update, remove }
}
