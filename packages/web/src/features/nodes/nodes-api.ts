/**
 * @module Queries and mutations of My Nodes and the Edit Node dialog (spec §7).
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useEffect, useState } from 'react'
import { useAuth } from '../../context/auth-context.tsx'
import { fetchNodesWithModels, FULL_LIST_BATCH } from '../../lib/node-queries.ts'
import type { CatalogueModel, NodeModelRecord, NodeRecord } from '../../lib/node-records.ts'
import { pb } from '../../lib/pb.ts'

/** My Nodes list refresh (spec §9). */
export const NODE_LIST_REFRESH_MS = 10_000

export const myNodesKey = (userId: string) => ['nodes', 'mine', userId] as const
export const nodeModelsKey = (nodeId: string) => ['node_models', nodeId] as const

/** The signed-in user's nodes, every 10 s unless paused (the edit dialog is open). */
export function useMyNodes(paused: boolean) {
  const { user } = useAuth()
  return useQuery({
    queryKey: myNodesKey(user?.id ?? ''),
    enabled: !!user,
    refetchInterval: paused ? false : NODE_LIST_REFRESH_MS,
    queryFn: () => fetchNodesWithModels(pb.filter('user = {:user}', { user: user!.id })),
  })
}

/** The active model catalogue, in sort order. */
export function useCatalogue() {
  return useQuery({
    queryKey: ['models', 'active'],
    queryFn: () =>
      pb.collection('models').getFullList<CatalogueModel>({
        batch: FULL_LIST_BATCH,
        filter: 'is_active = true',
        sort: 'sort_order',
      }),
  })
}

function fetchNodeModel(id: string): Promise<NodeModelRecord> {
  return pb.collection('node_models').getOne<NodeModelRecord>(id, { expand: 'model' })
}

/**
 * This node's node_models, kept live: a delete event removes the entry, any other event
 * refetches that record with its model expanded (spec §7).
 */
export function useNodeModels(nodeId: string) {
  const queryClient = useQueryClient()
  const key = nodeModelsKey(nodeId)
  useEffect(() => {
    let unsubscribe: (() => Promise<void>) | undefined
    let closed = false
    const replace = (update: (list: NodeModelRecord[]) => NodeModelRecord[]) =>
      queryClient.setQueryData<NodeModelRecord[]>(nodeModelsKey(nodeId), (old) => update(old ?? []))
    pb.collection('node_models')
      .subscribe<NodeModelRecord>(
        '*',
        (event) => {
          if (event.action === 'delete') {
            replace((list) => list.filter((r) => r.id !== event.record.id))
            return
          }
          fetchNodeModel(event.record.id)
            .then((record) =>
              replace((list) => [...list.filter((r) => r.id !== record.id), record]),
            )
            .catch((err: unknown) => console.warn('Failed to refetch node model', err))
        },
        { filter: pb.filter('node = {:node}', { node: nodeId }) },
      )
      .then((off) => {
        if (closed) void off()
        else unsubscribe = off
      })
      .catch((err: unknown) => console.warn('Live node model updates unavailable', err))
    return () => {
      closed = true
      void unsubscribe?.()
    }
  }, [nodeId, queryClient])
  return useQuery({
    queryKey: key,
    queryFn: () =>
      pb.collection('node_models').getFullList<NodeModelRecord>({
        batch: FULL_LIST_BATCH,
        filter: pb.filter('node = {:node}', { node: nodeId }),
        expand: 'model',
      }),
  })
}

function useInvalidateNodes() {
  const queryClient = useQueryClient()
  return () => queryClient.invalidateQueries({ queryKey: ['nodes'] })
}

export function useUpdateNode() {
  const invalidate = useInvalidateNodes()
  return useMutation({
    mutationFn: ({
      id,
      data,
    }: {
      id: string
      data: Partial<Pick<NodeRecord, 'device_name' | 'is_active'>>
    }) => pb.collection('nodes').update<NodeRecord>(id, data),
    onSettled: invalidate,
  })
}

export function useDeleteNode() {
  const invalidate = useInvalidateNodes()
  return useMutation({
    mutationFn: (id: string) => pb.collection('nodes').delete(id),
    onSettled: invalidate,
  })
}

export type NodeModelAction =
  /** `recordId`: the node already has a record for the model (e.g. a cancelled download). */
  | { kind: 'download'; modelId: string; recordId?: string }
  | { kind: 'cancel'; recordId: string }
  | { kind: 'serve'; recordId: string }
  | { kind: 'stop'; recordId: string }
  | { kind: 'delete'; recordId: string }
  | { kind: 'retry'; recordId: string }
  | { kind: 'remove'; recordId: string }

/**
 * The lifecycle calls of spec §7 (create, PATCH requested_*, DELETE). Download asks again on the
 * record a cancelled download left (one record per node and model); Retry stamps
 * retry_requested_at, which the node takes as "try again now"; Remove deletes the record (the
 * node deletes any partial file).
 */
export function runNodeModelAction(nodeId: string, action: NodeModelAction): Promise<unknown> {
  const col = pb.collection('node_models')
  switch (action.kind) {
    case 'download':
      if (action.recordId) return col.update(action.recordId, { requested_download: true })
      return col.create({
        node: nodeId,
        model: action.modelId,
        requested_download: true,
        requested_serving: false,
        is_downloaded: false,
        is_serving: false,
        tokens_per_second: 0,
      })
    case 'cancel':
      return col.update(action.recordId, { requested_download: false })
    case 'serve':
      return col.update(action.recordId, { requested_serving: true })
    case 'stop':
      return col.update(action.recordId, { requested_serving: false, is_serving: false })
    case 'delete':
    case 'remove':
      return col.delete(action.recordId)
    case 'retry':
      return col.update(action.recordId, { retry_requested_at: new Date().toISOString() })
  }
}

/** Runs a lifecycle action, then refreshes this node's list and the node table. */
export function useNodeModelAction(nodeId: string) {
  const queryClient = useQueryClient()
  return useMutation({
    mutationFn: (action: NodeModelAction) => runNodeModelAction(nodeId, action),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: nodeModelsKey(nodeId) })
      void queryClient.invalidateQueries({ queryKey: ['nodes'] })
    },
  })
}

/** Error alert prefix per action (spec §8). */
export const actionFailure: Record<NodeModelAction['kind'], string> = {
  download: 'Failed to request download',
  cancel: 'Failed to cancel download',
  serve: 'Failed to start serving',
  stop: 'Failed to stop serving',
  delete: 'Failed to delete model',
  retry: 'Failed to retry',
  remove: 'Failed to remove model',
}

/**
 * The node record kept live while the edit dialog is open (the node list pauses then, spec §9):
 * its status decides whether the models show as serving or offline.
 */
export function useLiveNode(node: NodeRecord): NodeRecord {
  const [live, setLive] = useState(node)
  useEffect(() => {
    let unsubscribe: (() => Promise<void>) | undefined
    let closed = false
    pb.collection('nodes')
      .subscribe<NodeRecord>(node.id, (event) => {
        if (event.action === 'delete') return
        setLive((old) => ({ ...old, ...pickNodeState(event.record) }))
      })
      .then((off) => {
        if (closed) void off()
        else unsubscribe = off
      })
      .catch((err: unknown) => console.warn('Live node updates unavailable', err))
    return () => {
      closed = true
      void unsubscribe?.()
    }
  }, [node.id])
  return live
}

function pickNodeState(record: NodeRecord): Partial<NodeRecord> {
  const { status, last_seen, hardware } = record
  return { status, last_seen, hardware }
}
