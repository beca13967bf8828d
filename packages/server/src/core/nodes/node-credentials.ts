/**
 * @module Node credentials: a random secret only the node holds; the server keeps its sha256 in
 * `_node_credentials`. Nodes present `Bearer <node_id>.<secret>` on the WebSocket and on downloads.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Db } from '../../db/database.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

export function newSecret(): string {
  return randomBytes(32).toString('base64url')
}

/** Creates a credential for a node and returns the secret (shown once, never stored). */
export async function issueCredential(db: Db, nodeId: string): Promise<string> {
  const secret = newSecret()
  const now = nowDate()
  await db
    .insertInto('_node_credentials')
    .values({
      id: newRecordId(),
      node: nodeId,
      secret_hash: sha256Hex(secret),
      revoked: 0,
      created: now,
      updated: now,
    })
    .execute()
  return secret
}

/** Revokes every credential of a node (deleted node, re-link of the house node). */
export async function revokeCredentials(db: Db, nodeId: string): Promise<void> {
  await db
    .updateTable('_node_credentials')
    .set({ revoked: 1, updated: nowDate() })
    .where('node', '=', nodeId)
    .execute()
}

/** The node id an `Authorization` header proves, or null (missing, malformed, wrong or revoked). */
export async function verifyNodeAuthorization(
  db: Db,
  header: string | undefined | null,
): Promise<string | null> {
  const match = /^Bearer\s+([a-z0-9]{15})\.(\S+)$/.exec(header ?? '')
  if (!match) return null
  const [, nodeId, secret] = match
  const node = await db.selectFrom('nodes').select('id').where('id', '=', nodeId).executeTakeFirst()
  if (!node) return null
  const rows = await db
    .selectFrom('_node_credentials')
    .select('secret_hash')
    .where('node', '=', nodeId)
    .where('revoked', '=', 0)
    .execute()
  const presented = Buffer.from(sha256Hex(secret), 'hex')
  const ok = rows.some((r) => {
    const stored = Buffer.from(String(r.secret_hash), 'hex')
    return stored.length === presented.length && timingSafeEqual(stored, presented)
  })
  return ok ? nodeId : null
}
