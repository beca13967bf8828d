/**
 * @module The stranded-hold sweep: a hold must always belong to an open request. Whatever a crash,
 * a bug or a lost race left behind (held > the reserves of the user's pending and processing
 * requests) is released, and said loudly, since it should never happen. Runs at start-up and
 * hourly; safe with several processes and with sends and settlements running meanwhile.
 */
import { sql } from 'kysely'
import { withUnitOfWork, type WriteTarget } from '../records/unit-of-work.ts'
import { nowDate } from '../../tools/dates.ts'
import { fromUnits } from './credits.ts'
import { OPEN_STATUSES } from './settlement.ts'

export interface SweptHold {
  user: string
  /** Units held before the sweep, and what the user's open requests reserve. */
  held: number
  reserved: number
}

export const HOLD_SWEEP_INTERVAL_MS = 60 * 60_000

/** Releases every hold not backed by an open request; answers what it changed. */
export async function sweepStrandedHolds(
  target: WriteTarget,
  log: (line: string) => void = console.error,
): Promise<SweptHold[]> {
  const suspects = await target.database.db
    .selectFrom('user_balances as b')
    .select(['b.user', 'b.held'])
    .where('b.held', '>', 0)
    .where(
      'b.held',
      '>',
      sql<number>`COALESCE((SELECT SUM(r.reserved) FROM requests r
        WHERE ${sql.ref('r.user')} = ${sql.ref('b.user')} AND r.status IN ('pending', 'processing')), 0)`,
    )
    .execute()
  const swept: SweptHold[] = []
  for (const s of suspects) {
    // One unit of work: the balance's new hold reaches its owner's screen once it committed.
    const found = await withUnitOfWork(target, async (uow) => {
      const trx = uow.trx
      const user = String(s.user)
      // Lock the balance first: a send holds and creates its request in one transaction, so once
      // the lock is ours every committed hold's request is visible to the next statement. (A lock,
      // not a change anyone sees: it stays off the unit's events.)
      const row = await trx
        .updateTable('user_balances')
        .set({ updated: nowDate() })
        .where('user', '=', user)
        .returning('held')
        .executeTakeFirst()
      const open = await trx
        .selectFrom('requests')
        .select((eb) => eb.fn.sum<number>('reserved').as('total'))
        .where('user', '=', user)
        .where('status', 'in', OPEN_STATUSES)
        .executeTakeFirst()
      const held = Number(row?.held ?? 0)
      const reserved = Number(open?.total ?? 0)
      if (held <= reserved) return null
      await uow.update('user_balances', (q) => q.set({ held: reserved }).where('user', '=', user))
      return { user, held, reserved }
    })
    if (!found) continue
    swept.push(found)
    log(
      `LEDGER: released a stranded hold of ${fromUnits(found.held - found.reserved)} credits for user ${found.user} ` +
        `(held ${fromUnits(found.held)}, open requests reserve ${fromUnits(found.reserved)})`,
    )
  }
  return swept
}
