/**
 * @module Test helpers for money: balances and ledger rows read through the records engine as the
 * API shows them (credits, not stored units), admin movements, and the ledger audit.
 */
import { expect } from 'vitest'
import { requireCollection } from '../../src/core/collections/registry.ts'
import { auditLedger, formatAudit } from '../../src/core/ledger/audit.ts'
import { toUnits } from '../../src/core/ledger/credits.ts'
import { applyEntry } from '../../src/core/ledger/ledger-entry.ts'
import { withUnitOfWork } from '../../src/core/records/unit-of-work.ts'
import { server as superuser } from '../../src/core/records/caller.ts'
import type { RecordJson } from '../../src/core/records/serialize.ts'
import type { TestServer } from '../harness.ts'

/** The user's balance record as the API shows it (zeros when there is none). */
export async function balanceOf(server: TestServer, user: string): Promise<RecordJson> {
  const { items } = await server.core.records.list(superuser, requireCollection('user_balances'), {
    filter: `user = "${user}"`,
    perPage: 1,
  })
  return items[0] ?? { balance: 0, held: 0, total_earned: 0, total_spent: 0 }
}

/** The user's ledger rows as the API shows them, oldest first. */
export async function txsOf(server: TestServer, user: string): Promise<RecordJson[]> {
  const { items } = await server.core.records.list(
    superuser,
    requireCollection('user_credit_txs'),
    {
      filter: `user = "${user}"`,
      sort: 'created,id',
      perPage: 500,
    },
  )
  return items
}

/** An admin movement of `credits` (positive: grant, negative: debit). */
export async function adjustBalance(
  server: TestServer,
  user: string,
  credits: number,
  description = 'test',
) {
  await withUnitOfWork(server.core, (uow) =>
    applyEntry(uow, {
      user,
      type: credits >= 0 ? 'credit_admin' : 'debit_admin',
      amount: toUnits(Math.abs(credits)),
      description,
    }),
  )
}

/** Runs the ledger audit on the server's database and fails the test with its report if broken. */
export async function expectAuditPasses(server: TestServer) {
  const report = await auditLedger(server.core.database.db)
  if (!report.ok) expect.fail(formatAudit(report))
  return report
}
