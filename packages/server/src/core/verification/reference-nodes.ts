/**
 * @module Finding a reference node to score a node's answer (canaries and spot checks alike): a
 * node the operator trusts, serving the model, connected to this coordinator process, and not the
 * node being judged.
 */
import type { CoreApp } from '../app.ts'
import type { NodeRegistry } from '../nodes/node-registry.ts'

export interface ReferenceNode {
  nodeId: string
  /** The model file's hash, which picks the judge's thresholds. */
  sha256: string
}

export async function findReference(
  core: CoreApp,
  registry: NodeRegistry,
  nodeId: string,
  modelId: string,
): Promise<ReferenceNode | null> {
  const rows = await core.database.db
    .selectFrom('node_models as nm')
    .innerJoin('nodes as n', 'n.id', 'nm.node')
    .innerJoin('models as m', 'm.id', 'nm.model')
    .select(['n.id as id', 'm.sha256 as sha256'])
    .where('nm.model', '=', modelId)
    .where('nm.is_serving', '=', 1)
    .where('n.trusted', '=', 1)
    .where('n.id', '!=', nodeId)
    .execute()
  const live = rows.find((r) => {
    const s = registry.local(String(r.id))
    return s?.open && s.helloed
  })
  return live ? { nodeId: String(live.id), sha256: String(live.sha256) } : null
}
