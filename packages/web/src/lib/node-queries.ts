/**
 * @module Record reads shared by My Nodes and Network Status (spec §7).
 */
import type { RecordModel } from 'pocketbase'
import { pb } from './pb.ts'
import { modelLabel, type NodeModelRecord, type NodeRecord } from './node-records.ts'

/** Full-list batch size (spec §9). */
export const FULL_LIST_BATCH = 500

type RawNode = Omit<NodeRecord, 'servingModels'> & RecordModel

/** A node's serving node_models, model expanded. */
export function fetchServingNodeModels(nodeId: string): Promise<NodeModelRecord[]> {
  return pb.collection('node_models').getFullList<NodeModelRecord>({
    batch: FULL_LIST_BATCH,
    filter: pb.filter('node = {:node} && is_serving = true', { node: nodeId }),
    expand: 'model',
  })
}

/**
 * Nodes (optionally filtered) each with servingModels, the names of its serving models.
 * A node whose model list fails to load shows no models rather than failing the whole list.
 */
export async function fetchNodesWithModels(filter?: string): Promise<NodeRecord[]> {
  const nodes = await pb.collection('nodes').getFullList<RawNode>({
    batch: FULL_LIST_BATCH,
    sort: 'device_name,id',
    ...(filter ? { filter } : {}),
  })
  return Promise.all(
    nodes.map(async (node) => {
      let servingModels: string[] = []
      try {
        const serving = await fetchServingNodeModels(node.id)
        servingModels = serving.map((nm) => modelLabel(nm.expand?.model))
      } catch (err) {
        console.warn(`Failed to load models of node ${node.id}`, err)
      }
      return { ...node, servingModels }
    }),
  )
}
