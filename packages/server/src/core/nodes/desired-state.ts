/**
 * @module The desired state of one node's models, as the `desired_state` frame carries it. Models
 * the node could not download and verify (no file name or no valid sha256) are left out.
 */
import type { DesiredNodeModel } from '@meshwork/protocol'
import type { Db } from '../../db/database.ts'

export async function loadDesiredState(db: Db, nodeId: string): Promise<DesiredNodeModel[]> {
  const rows = await db
    .selectFrom('node_models as nm')
    .innerJoin('models as m', 'm.id', 'nm.model')
    .select([
      'nm.id as id',
      'nm.requested_download as requested_download',
      'nm.requested_serving as requested_serving',
      'nm.retry_requested_at as retry_requested_at',
      'm.id as model_id',
      'm.name as name',
      'm.file_name as file_name',
      'm.file_size_bytes as file_size_bytes',
      'm.sha256 as sha256',
    ])
    .where('nm.node', '=', nodeId)
    .orderBy('nm.created')
    .execute()
  return rows
    .filter((r) => isBareFileName(String(r.file_name)) && /^[0-9a-f]{64}$/i.test(String(r.sha256)))
    .map((r) => ({
      id: String(r.id),
      model: {
        id: String(r.model_id),
        name: String(r.name),
        file_name: String(r.file_name),
        file_size_bytes: Math.max(0, Math.round(Number(r.file_size_bytes) || 0)),
        sha256: String(r.sha256).toLowerCase(),
      },
      requested_download: Boolean(Number(r.requested_download)),
      requested_serving: Boolean(Number(r.requested_serving)),
      retry: String(r.retry_requested_at ?? ''),
    }))
}

/** The node stores the file under this name: no directories, no hidden files. */
function isBareFileName(name: string): boolean {
  return Boolean(name) && !name.includes('/') && !name.includes('\\') && !name.startsWith('.')
}
