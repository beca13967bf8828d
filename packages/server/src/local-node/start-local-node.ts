/**
 * @module The coordinator's own node for `npm start`: a built-in house account owns one node that
 * serves the catalogue's default small model, so a newcomer's first chat is answered without any
 * setup. Idempotent across restarts; the agent runs in-process through @meshwork/node's library.
 */
import { join } from 'node:path'
import { startAgent, type RunningAgent } from '@meshwork/node'
import type { CoreApp } from '../core/app.ts'
import { requireCollection } from '../core/collections/registry.ts'
import { SYSTEM_EMAIL_DOMAIN } from '../core/auth/email-identity.ts'
import { issueCredential, newSecret, revokeCredentials } from '../core/nodes/node-credentials.ts'
import { server as superuser } from '../core/records/caller.ts'
import { getOrCreateSetting } from '../db/settings.ts'
import { newRecordId } from '../tools/ids.ts'

/** At the system's reserved domain: no sign-up can take it (see core/auth/email-identity.ts). */
export const HOUSE_EMAIL = `house@${SYSTEM_EMAIL_DOMAIN}`
/** The `_settings` key holding the house account's id: the house is found by it, never by e-mail. */
export const HOUSE_SETTING = 'house_user_id'
export const LOCAL_NODE_NAME = 'Meshwork local node'
export const DEFAULT_LOCAL_MODEL = 'stories260K'

export interface LocalNodeOptions {
  /** Coordinator URL the agent connects to (this process). */
  server: string
  /** Agent home (downloaded models live in `<home>/models`). */
  home: string
  modelName?: string
  threads?: number | 'auto'
}

export interface LocalNode {
  nodeId: string
  agent: RunningAgent
}

/** Makes sure the house account, its node and its node model exist; returns the node id. */
export async function ensureLocalNode(
  core: CoreApp,
  modelName = DEFAULT_LOCAL_MODEL,
): Promise<{ nodeId: string; nodeModelId: string | null }> {
  const db = core.database.db
  const house = { id: await ensureHouseAccount(core) }
  let node = await db
    .selectFrom('nodes')
    .select('id')
    .where('user', '=', house.id)
    .orderBy('created')
    .executeTakeFirst()
  if (!node) {
    const created = await core.records.create(superuser, requireCollection('nodes'), {
      user: house.id,
      device_name: LOCAL_NODE_NAME,
    })
    node = { id: created.id }
  }
  const nodeId = String(node.id)
  // The built-in node runs inside the coordinator: it is a reference node for verification.
  await db
    .updateTable('nodes')
    .set({ trusted: 1, verification: 'trusted' })
    .where('id', '=', nodeId)
    .execute()
  const model = await db
    .selectFrom('models')
    .select('id')
    .where('name', '=', modelName)
    .where('is_active', '=', 1)
    .executeTakeFirst()
  if (!model) return { nodeId, nodeModelId: null }
  const existing = await db
    .selectFrom('node_models')
    .select(['id', 'requested_download', 'requested_serving'])
    .where('node', '=', nodeId)
    .where('model', '=', model.id)
    .executeTakeFirst()
  if (existing) {
    if (!Number(existing.requested_download) || !Number(existing.requested_serving)) {
      await core.records.update(superuser, requireCollection('node_models'), String(existing.id), {
        requested_download: true,
        requested_serving: true,
      })
    }
    return { nodeId, nodeModelId: String(existing.id) }
  }
  const nm = await core.records.create(superuser, requireCollection('node_models'), {
    node: nodeId,
    model: model.id,
    requested_download: true,
    requested_serving: true,
  })
  return { nodeId, nodeModelId: String(nm.id) }
}

/**
 * The house account's id, creating the account the first time. Its id is chosen and stored first
 * (`_settings`, first writer wins across processes), then the account is made under that id with
 * an address at the reserved domain and a random password nobody keeps. An account that merely
 * has the old house address (`house@meshwork.local`, which anyone could register) is never it.
 */
export async function ensureHouseAccount(core: CoreApp): Promise<string> {
  const db = core.database.db
  const id = await getOrCreateSetting(db, HOUSE_SETTING, newRecordId)
  const exists = async () =>
    Boolean(await db.selectFrom('users').select('id').where('id', '=', id).executeTakeFirst())
  if (await exists()) return id
  const password = newSecret().slice(0, 40)
  try {
    await core.records.create(superuser, requireCollection('users'), {
      id,
      email: HOUSE_EMAIL,
      password,
      passwordConfirm: password,
      name: 'Meshwork',
      verified: true,
    })
  } catch (err) {
    // Another process made it at the same moment.
    if (!(await exists())) throw err
  }
  return id
}

/** Ensures the records, issues a fresh credential (older ones are revoked) and starts the agent. */
export async function startLocalNode(core: CoreApp, options: LocalNodeOptions): Promise<LocalNode> {
  const { nodeId } = await ensureLocalNode(core, options.modelName)
  await revokeCredentials(core.database.db, nodeId)
  const credential = await issueCredential(core.database.db, nodeId)
  const agent = await startAgent({
    server: options.server,
    nodeId,
    credential,
    home: options.home,
    threads: options.threads,
  })
  return { nodeId, agent }
}

export const localNodeHome = (dataDir: string) => join(dataDir, 'local-node')
