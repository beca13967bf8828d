/**
 * @module Node choice for one request: among connected nodes that are active and serving the
 * model, those with a free slot, best reputation first, then the fastest measured speed, then the
 * least loaded.
 */
import type { Db } from '../../db/database.ts'
import type { NodeHandle, NodeRegistry } from '../nodes/node-registry.ts'

export interface NodeChoice {
  /** The best node with a free slot, or null. */
  node: NodeHandle | null
  /** Whether any eligible node exists at all (busy ones included); if not, waiting is useless. */
  anyEligible: boolean
}

export async function pickNode(
  db: Db,
  registry: NodeRegistry,
  modelId: string,
  exclude: Set<string>,
): Promise<NodeChoice> {
  const rows = await db
    .selectFrom('node_models as nm')
    .innerJoin('nodes as n', 'n.id', 'nm.node')
    .select(['n.id as id', 'n.reputation_score as reputation', 'nm.tokens_per_second as tps'])
    .where('nm.model', '=', modelId)
    .where('nm.is_serving', '=', 1)
    .where('n.is_active', '=', 1)
    .execute()
  const eligible = rows
    .map((r) => ({
      session: registry.get(String(r.id)),
      reputation: Number(r.reputation),
      tps: Number(r.tps),
    }))
    .filter((c): c is { session: NodeHandle; reputation: number; tps: number } =>
      Boolean(c.session?.open && c.session.helloed && !exclude.has(c.session.nodeId)),
    )
  const free = eligible.filter((c) => c.session.freeSlots > 0)
  free.sort(
    (a, b) =>
      b.reputation - a.reputation || b.tps - a.tps || a.session.jobs.size - b.session.jobs.size,
  )
  return { node: free[0]?.session ?? null, anyEligible: eligible.length > 0 }
}
