/**
 * @module Reference nodes for the admin command line: an operator trusts a node it runs (or
 * vouches for), making it a reference that scores other nodes' canaries, exempt from canaries and
 * probation itself (what it earned on probation is paid to its owner); untrusting puts it back on
 * probation.
 */
import type { Db } from '../db/database.ts'
import { releasePendingEarnings } from '../core/ledger/pending-earnings.ts'
import { RecordEvents } from '../core/records/record-events.ts'
import { withUnitOfWork } from '../core/records/unit-of-work.ts'
import { nowDate } from '../tools/dates.ts'
import { AdminInputError } from './admin-commands.ts'

export async function setTrusted(db: Db, nodeId: string, trusted: boolean): Promise<string> {
  const node = await db
    .selectFrom('nodes')
    .select(['id', 'device_name'])
    .where('id', '=', nodeId)
    .executeTakeFirst()
  if (!node) throw new AdminInputError(`No node ${nodeId}`)
  // No subscriber lives in this process: the unit of work publishes to nobody.
  await withUnitOfWork({ database: { db }, events: new RecordEvents() }, async (uow) => {
    await uow.trx
      .updateTable('nodes')
      .set({
        trusted: trusted ? 1 : 0,
        verification: trusted ? 'trusted' : 'probation',
        updated: nowDate(),
      })
      .where('id', '=', nodeId)
      .execute()
    // The operator vouches for the node: what it earned on probation is paid to its owner.
    if (trusted) await releasePendingEarnings(uow, nodeId)
  })
  return String(node.device_name)
}

export async function listNodes(db: Db) {
  return (
    db
      .selectFrom('nodes as n')
      .leftJoin('users as u', 'u.id', 'n.user')
      .select([
        'n.id as id',
        'n.device_name as device_name',
        'u.email as owner',
        'n.status as status',
        'n.verification as verification',
        'n.reputation_score as reputation',
        'n.backend as backend',
        'n.canaries_passed as passed',
        'n.canaries_failed as failed',
      ])
      // Spot checks of its users' answers (docs/verification.md), checked and failed.
      .select((eb) => [
        eb
          .selectFrom('_spot_checks as s')
          .select(eb.fn.countAll().as('c'))
          .whereRef('s.node', '=', 'n.id')
          .as('spot_checks'),
        eb
          .selectFrom('_spot_checks as s')
          .select(eb.fn.countAll().as('c'))
          .whereRef('s.node', '=', 'n.id')
          .where('s.status', '=', 'failed')
          .as('spot_failed'),
      ])
      .orderBy('n.created')
      .execute()
  )
}
