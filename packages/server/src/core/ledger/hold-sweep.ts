/**
 * @module The hold sweeps. A hold must always belong to an open request or to a deleted request
 * awaiting the charge of what its node streamed (deleted-requests.ts). Whatever a crash, a bug or
 * a lost race left beyond that (held > the reserves of the user's pending and processing requests
 * plus the user's holds awaiting a deletion's charge) is released, and said loudly, since it
 * should never happen: at start-up and hourly. A hold awaiting a deletion's charge that never came
 * (the process holding the job died, its node's frames never arrived) is released uncharged once
 * older than DELETION_HOLD_BOUND_MS: at start-up and every DELETION_HOLD_CHECK_MS. Both are safe
 * with several processes and with sends, settlements and charges running meanwhile.
 */
import { sql } from 'kysely'
import { withUnitOfWork, type UnitOfWork, type WriteTarget } from '../records/unit-of-work.ts'
import { formatDate, nowDate } from '../../tools/dates.ts'
import { fromUnits } from './credits.ts'
import { DELETION_HOLDS } from './deleted-requests.ts'
import { releaseHold } from './reservation.ts'
import { OPEN_STATUSES } from './settlement.ts'

export interface SweptHold {
  user: string
  /**
   * Units held before the sweep, and what must stay held: the reserves of the user's open
   * requests plus the user's holds awaiting a deletion's charge.
   */
  held: number
  reserved: number
}

export const HOLD_SWEEP_INTERVAL_MS = 60 * 60_000

/**
 * How long a hold may await a deleted request's charge. The charge follows the deletion by a
 * record event's trip to the process running the job (milliseconds, over Redis when scaled out)
 * and that request's writes queued before it (a settlement tried three times takes seconds): two
 * minutes is far beyond that, and short enough that credits kept by a process that died are back
 * soon. A charge later still finds no kept hold and takes only what is free.
 */
export const DELETION_HOLD_BOUND_MS = 2 * 60_000
/** How often each process looks for holds past the bound (a cheap read of a small table). */
export const DELETION_HOLD_CHECK_MS = 30_000

/** Releases every hold not backed by an open request or a deletion's charge; answers what it changed. */
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
        WHERE ${sql.ref('r.user')} = ${sql.ref('b.user')} AND r.status IN ('pending', 'processing')), 0)
        + COALESCE((SELECT SUM(d.amount) FROM ${sql.table(DELETION_HOLDS)} d
        WHERE ${sql.ref('d.user')} = ${sql.ref('b.user')}), 0)`,
    )
    .execute()
  const swept: SweptHold[] = []
  for (const s of suspects) {
    const found = await withUnitOfWork(target, (uow) => sweepUser(uow, String(s.user)))
    if (!found) continue
    swept.push(found)
    log(
      `LEDGER: released a stranded hold of ${fromUnits(found.held - found.reserved)} credits for user ${found.user} ` +
        `(held ${fromUnits(found.held)}, open requests and deletions awaiting their charge hold ${fromUnits(found.reserved)})`,
    )
  }
  return swept
}

/** One user's stranded hold released, in one unit of work (the new hold reaches its owner's screen). */
async function sweepUser(uow: UnitOfWork, user: string): Promise<SweptHold | null> {
  const trx = uow.trx
  // Lock the balance first: a send holds and creates its request in one transaction, so once
  // the lock is ours every committed hold's request is visible to the next statement. (A lock,
  // not a change anyone sees: it stays off the unit's events.)
  const row = await trx
    .updateTable('user_balances')
    .set({ updated: nowDate() })
    .where('user', '=', user)
    .returning('held')
    .executeTakeFirst()
  // One statement, one snapshot: a deletion committing meanwhile moves a hold from its request to
  // `_deletion_holds`, and two statements could see it in neither.
  const kept = await trx
    .selectFrom('user_balances as b')
    .select((eb) => [
      eb
        .selectFrom('requests')
        .select((r) => r.fn.sum<number>('reserved').as('total'))
        .where('user', '=', user)
        .where('status', 'in', OPEN_STATUSES)
        .as('reserved'),
      eb
        .selectFrom(DELETION_HOLDS)
        .select((d) => d.fn.sum<number>('amount').as('total'))
        .where('user', '=', user)
        .as('awaiting'),
    ])
    .where('b.user', '=', user)
    .executeTakeFirst()
  const held = Number(row?.held ?? 0)
  const reserved = Number(kept?.reserved ?? 0) + Number(kept?.awaiting ?? 0)
  if (held <= reserved) return null
  await uow.update('user_balances', (q) => q.set({ held: reserved }).where('user', '=', user))
  return { user, held, reserved }
}

export interface SweptDeletionHold {
  request: string
  user: string
  amount: number
}

/**
 * Releases, uncharged, every hold that has awaited a deleted request's charge for longer than
 * `boundMs`, each in one unit of work taking its row with a guarded DELETE (a charge running at
 * the same moment takes it or finds it gone, never both); answers what it released.
 */
export async function sweepDeletionHolds(
  target: WriteTarget,
  { boundMs = DELETION_HOLD_BOUND_MS, log = console.error as (line: string) => void } = {},
): Promise<SweptDeletionHold[]> {
  const cutoff = formatDate(new Date(Date.now() - boundMs))
  const old = await target.database.db
    .selectFrom(DELETION_HOLDS)
    .select('id')
    .where('created', '<=', cutoff)
    .execute()
  const swept: SweptDeletionHold[] = []
  for (const o of old) {
    const found = await withUnitOfWork(target, async (uow) => {
      const row = await uow.trx
        .deleteFrom(DELETION_HOLDS)
        .where('id', '=', String(o.id))
        .returning(['user', 'amount'])
        .executeTakeFirst()
      if (!row) return null
      const released = { request: String(o.id), user: String(row.user), amount: Number(row.amount) }
      await releaseHold(uow, released.user, released.amount)
      return released
    })
    if (!found) continue
    swept.push(found)
    log(
      `LEDGER: released uncharged a hold of ${fromUnits(found.amount)} credits for user ${found.user} ` +
        `kept for deleted request ${found.request}, whose charge never came`,
    )
  }
  return swept
}
