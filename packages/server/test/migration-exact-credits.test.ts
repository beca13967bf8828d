/**
 * Migration 0003 on a database written by the floating-point release: credits become exact
 * integer thousandths, the API shows the same numbers as before, balances are reconciled with
 * their rows where rounding explains the difference (and only there), and the audit agrees.
 */
import { describe, expect, it } from 'vitest'
import { auditLedger } from '../src/core/ledger/audit.ts'
import type { Db } from '../src/db/database.ts'
import { dialects, startTestServer } from './harness.ts'
import { balanceOf, txsOf } from './support/ledger.ts'
import { oldDatabase, oldUser } from './support/old-database.ts'

const t0 = '2026-01-01 00:00:00.000Z'
const t1 = '2026-01-02 00:00:00.000Z'

async function balanceRow(
  db: Db,
  user: string,
  balance: number,
  totals = { earned: 0, spent: 0, held: 0 },
) {
  await db
    .insertInto('user_balances')
    .values({
      id: `b${user}`,
      user,
      balance,
      held: totals.held,
      total_earned: totals.earned,
      total_spent: totals.spent,
      created: t0,
      updated: t0,
    })
    .execute()
}

async function tx(
  db: Db,
  id: string,
  user: string,
  type: string,
  amount: number,
  balanceAfter: number,
  created = t0,
  request = '',
) {
  await db
    .insertInto('user_credit_txs')
    .values({
      id,
      user,
      type,
      amount,
      balance_after: balanceAfter,
      request,
      description: 'old',
      created,
      updated: created,
    })
    .execute()
}

const paid = 'req000000000001'

describe.each(dialects)('[%s] migration 0003: exact credits', (dialect) => {
  it('converts float credits to exact units, keeps the API numbers and reconciles only rounding', async () => {
    const old = await oldDatabase(dialect, '0002-seed', async (db) => {
      // Alice: 1000 granted, 553.2 taken, 0.3 paid to Bob's node: 446.5 left, and a stale hold.
      await oldUser(db, 'aliceuser000001', 'alice@example.com', t0)
      await balanceRow(db, 'aliceuser000001', 446.5, { earned: 0, spent: 0.3, held: 37.5 })
      await tx(db, 'txalice00000001', 'aliceuser000001', 'credit_admin', 1000, 1000)
      await tx(db, 'txalice00000002', 'aliceuser000001', 'debit_admin', 553.2, 446.8, t1)
      await tx(
        db,
        'txalice00000003',
        'aliceuser000001',
        'debit_inference_request',
        0.3,
        446.5,
        t1,
        paid,
      )
      // Bob: earned it in two float parts; his balance is their float sum 0.30000000000000004.
      await oldUser(db, 'bobuser00000001', 'bob@example.com', t0)
      await balanceRow(db, 'bobuser00000001', 0.1 + 0.2, { earned: 0.1 + 0.2, spent: 0, held: 0 })
      await tx(
        db,
        'txbob0000000001',
        'bobuser00000001',
        'credit_inference_request',
        0.1,
        0.1,
        t0,
        paid,
      )
      await tx(
        db,
        'txbob0000000002',
        'bobuser00000001',
        'credit_inference_request',
        0.2,
        0.1 + 0.2,
        t1,
        paid,
      )
      // Carol: three tiny credits round to 0 each, but their sum to 1 unit: a rounding row.
      await oldUser(db, 'caroluser000001', 'carol@example.com', t0)
      await balanceRow(db, 'caroluser000001', 0.0012)
      for (const i of [1, 2, 3])
        await tx(db, `txcarol0000000${i}`, 'caroluser000001', 'credit_admin', 0.0004, 0.0004 * i)
      // Dave: a balance its rows cannot explain (50 vs 10): not papered over.
      await oldUser(db, 'daveuser0000001', 'dave@example.com', t0)
      await balanceRow(db, 'daveuser0000001', 50)
      await tx(db, 'txdave000000001', 'daveuser0000001', 'credit_admin', 10, 10)
      await db
        .updateTable('models')
        .set({ credit_multiplier: 1.5 })
        .where('name', '=', 'stories260K')
        .execute()
    })
    const server = await startTestServer(dialect, old)
    try {
      const alice = server.client()
      await alice.collection('users').authWithPassword('alice@example.com', 'password123')
      expect(await alice.collection('user_balances').getFirstListItem('')).toMatchObject({
        balance: 446.5,
        total_spent: 0.3,
        held: 0,
      })
      const rows = await alice.collection('user_credit_txs').getFullList({ sort: 'created,amount' })
      expect(rows.map((r) => [r.type, r.amount, r.balance_after])).toEqual([
        ['credit_admin', 1000, 1000],
        ['debit_inference_request', 0.3, 446.5],
        ['debit_admin', 553.2, 446.8],
      ])
      const stories = await alice
        .collection('available_models')
        .getFirstListItem('name = "stories260K"')
      expect(stories.credit_multiplier).toBe(1.5)
      expect(
        (await alice.collection('models').getFirstListItem('name = "llama-2-tiny-random"'))
          .credit_multiplier,
      ).toBe(2)
      // Stored as integers.
      const stored = await server.core.database.db
        .selectFrom('user_balances')
        .select('balance')
        .where('user', '=', 'aliceuser000001')
        .executeTakeFirstOrThrow()
      expect(stored.balance).toBe(446_500)

      expect(await balanceOf(server, 'bobuser00000001')).toMatchObject({
        balance: 0.3,
        total_earned: 0.3,
      })
      expect(await balanceOf(server, 'caroluser000001')).toMatchObject({ balance: 0.001 })
      const carol = await txsOf(server, 'caroluser000001')
      expect(carol.map((t) => [t.type, t.amount, t.description])).toContainEqual([
        'credit_admin',
        0.001,
        'Rounding to exact credits',
      ])
      expect(await balanceOf(server, 'daveuser0000001')).toMatchObject({ balance: 50 })
      expect(await txsOf(server, 'daveuser0000001')).toHaveLength(1)

      const report = await auditLedger(server.core.database.db)
      const problems = report.checks.flatMap((c) => c.problems)
      expect(problems).toEqual(['user daveuser0000001: balance 50 but its ledger rows sum to 10'])
    } finally {
      await server.stop()
    }
  })
})
