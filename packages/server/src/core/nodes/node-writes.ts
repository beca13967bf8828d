/**
 * @module The registry's writes of what nodes report: a node's row, one of its models' status,
 * and nodes no live process holds (stored offline). Written as the server (a node never writes
 * records), each one a record write with its events.
 */
import type { NodeToServerFrame } from '@meshwork/protocol'
import type { CoreApp } from '../app.ts'
import { requireCollection } from '../collections/registry.ts'
import { server as superuser } from '../records/caller.ts'
import { withSingleWrite } from '../records/unit-of-work.ts'
import { ApiError } from '../../tools/api-error.ts'

/** Updates the node's row, unless its owner deleted it. */
export async function updateNode(
  core: CoreApp,
  nodeId: string,
  values: Record<string, unknown>,
): Promise<void> {
  const exists = await core.database.db
    .selectFrom('nodes')
    .select('id')
    .where('id', '=', nodeId)
    .executeTakeFirst()
  if (!exists) return
  try {
    await core.records.update(superuser, requireCollection('nodes'), nodeId, values)
  } catch (err) {
    // Deleted by its owner between the check and the write: nothing left to update.
    if (!(err instanceof ApiError && err.status === 404)) throw err
  }
}

/**
 * Writes what changed in one of the node's models; answers whether the model began serving (a
 * slot for its requests), null when it is not this node's model or nothing changed.
 */
export async function saveModelStatus(
  core: CoreApp,
  nodeId: string,
  frame: Extract<NodeToServerFrame, { type: 'model_status' }>,
): Promise<{ beganServing: boolean } | null> {
  const row = await core.database.db
    .selectFrom('node_models')
    .selectAll()
    .where('id', '=', frame.node_model_id)
    .where('node', '=', nodeId)
    .executeTakeFirst()
  if (!row) return null // not this node's model: ignored
  const next = {
    is_downloaded: frame.is_downloaded ? 1 : 0,
    is_serving: frame.is_serving ? 1 : 0,
    download_progress: String(Math.round(frame.download_progress * 10) / 10),
    tokens_per_second: Math.round(frame.tokens_per_second * 10) / 10,
    error_message: frame.error_message,
  }
  const changed = Object.entries(next).filter(([k, v]) => String(row[k]) !== String(v))
  if (!changed.length) return null
  await core.records.update(
    superuser,
    requireCollection('node_models'),
    frame.node_model_id,
    Object.fromEntries(changed),
  )
  return { beganServing: frame.is_serving && !Number(row.is_serving) }
}

/** Stores offline the nodes stored online whose `last_seen` is before `staleBefore`; their ids. */
export async function storeOfflineSince(core: CoreApp, staleBefore: string): Promise<string[]> {
  const rows = await withSingleWrite(core, (uow) =>
    uow.update('nodes', (q) =>
      q
        .set({ status: 'offline' })
        .where('status', 'in', ['online', 'busy'])
        .where('last_seen', '<', staleBefore),
    ),
  )
  return rows.map((row) => String(row.id))
}
