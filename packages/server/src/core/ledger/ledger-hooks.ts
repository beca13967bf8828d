/**
 * @module The ledger's reactions to record writes, each inside the write's transaction: a new
 * user's initial credits; a request deleted with its conversation or account ends (its hold
 * released, or kept for the charge of what its node streamed: deleted-requests.ts); a deleted account is closed (what it still held leaves through a final ledger row) and its
 * rows are detached, never deleted, so every invariant of the audit still holds afterwards; a node
 * deleted while on probation returns its pending earnings to the users who paid them.
 */
import type { UnitOfWork } from '../records/unit-of-work.ts'
import type { RecordHooks } from '../records/record-hooks.ts'
import type { Row } from '../records/serialize.ts'
import { toUnits } from './credits.ts'
import { applyEntry } from './ledger-entry.ts'
import { reversePendingEarnings } from './pending-earnings.ts'
import { endDeletedRequest, releaseDeletionHoldsOf } from './deleted-requests.ts'
import { OPEN_STATUSES } from './settlement.ts'

/** The `user` of a deleted account's ledger rows and requests: never a record id, so no sign-up
 * can claim them. */
export const closedAccount = (userId: string) => `deleted_${userId}`

export function bindLedgerHooks(hooks: RecordHooks, initialCredits: number): void {
  const initialUnits = toUnits(initialCredits)

  // Every new user starts with a balance, in the same transaction as the user record.
  hooks.onAfterCreate('users', async (uow, _collection, user) => {
    await applyEntry(uow, {
      user: user.id as string,
      type: 'credit_admin',
      amount: initialUnits,
      description: 'Initial credits',
    })
  })

  hooks.onBeforeDelete('requests', async (uow, _collection, request) => {
    await endDeletedRequest(uow, String(request.id))
  })

  hooks.onBeforeDelete('users', (uow, _collection, user) => closeAccount(uow, user))

  // A node deleted (by its owner, or with its owner's account) before it was verified never will
  // be: what it earned on probation goes back to the users who paid for it.
  hooks.onBeforeDelete('nodes', async (uow, _collection, node) => {
    await reversePendingEarnings(
      uow,
      String(node.id),
      'the node that answered was removed before it was verified',
    )
  })
}

async function closeAccount(uow: UnitOfWork, user: Row): Promise<void> {
  const trx = uow.trx
  const id = String(user.id)
  const open = await trx
    .selectFrom('requests')
    .select('id')
    .where('user', '=', id)
    .where('status', 'in', OPEN_STATUSES)
    .execute()
  // A deleted account is not charged: the holds still awaiting the charge of a conversation
  // deleted earlier and its requests' holds are released, and the closing row takes the whole
  // balance. The kept holds' rows first, then the balance, the order a charge takes its locks in.
  await releaseDeletionHoldsOf(uow, id)
  for (const r of open) await endDeletedRequest(uow, String(r.id), { keepHold: false })
  const balance = await trx
    .selectFrom('user_balances')
    .select('balance')
    .where('user', '=', id)
    .executeTakeFirst()
  const remaining = Number(balance?.balance ?? 0)
  if (remaining > 0) {
    await applyEntry(uow, {
      user: id,
      type: 'debit_account_closed',
      amount: remaining,
      description: 'Account deleted',
    })
  }
  // Straight on the transaction, unpublished: the only subscriber who could see these rows is
  // the account being deleted. Every row naming the account goes: a sign-up may choose its id, and
  // whoever next signs up as `id` would get the prompts and answers of its requests (those made
  // with an API key have no conversation to cascade with) and the refunds of what it paid nodes
  // on probation (a payer gone forfeits them).
  const closed = closedAccount(id)
  for (const table of ['user_credit_txs', 'requests'])
    await trx.updateTable(table).set({ user: closed }).where('user', '=', id).execute()
  await trx
    .updateTable('_pending_earnings')
    .set({ payer: closed })
    .where('payer', '=', id)
    .where('status', '=', 'pending')
    .execute()
}
