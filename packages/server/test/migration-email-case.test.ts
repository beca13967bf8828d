/**
 * Migration 0004 on a database where e-mails were unique only as typed: each group of look-alikes
 * keeps one account on the address (verified first, then the oldest); the others are renamed to
 * `<id>@renamed.meshwork.invalid`, cannot sign in by their old address, are listed for the
 * operator and get an address back with `set-email`. Addresses registered at the now reserved
 * system domain are renamed too, so no old account is ever the house. Balances are untouched.
 */
import { describe, expect, it } from 'vitest'
import { listRenamedEmails, setEmail } from '../src/cli/admin-commands.ts'
import type { Db } from '../src/db/database.ts'
import { ensureHouseAccount } from '../src/local-node/start-local-node.ts'
import { dialects, startTestServer } from './harness.ts'
import { balanceOf, expectAuditPasses } from './support/ledger.ts'
import { postJson } from './support/network.ts'
import { oldDatabase, oldUser } from './support/old-database.ts'

async function withCredits(db: Db, id: string) {
  const t = '2026-01-01 00:00:00.000Z'
  await db
    .insertInto('user_balances')
    .values({
      id: `b${id}`.slice(0, 15),
      user: id,
      balance: 1_000_000,
      held: 0,
      total_earned: 0,
      total_spent: 0,
      created: t,
      updated: t,
    })
    .execute()
  await db
    .insertInto('user_credit_txs')
    .values({
      id: `t${id}`.slice(0, 15),
      user: id,
      type: 'credit_admin',
      amount: 1_000_000,
      balance_after: 1_000_000,
      request: '',
      description: 'Initial credits',
      created: t,
      updated: t,
    })
    .execute()
}

describe.each(dialects)('[%s] migration 0004: e-mails unique ignoring case', (dialect) => {
  it('keeps one account per address, renames the others and reserved ones, and lets the operator fix them', async () => {
    const accounts: Array<
      [id: string, email: string, created: string, password: string, verified?: boolean]
    > = [
      ['bobfirst0000001', 'bob@x.com', '2026-01-01 00:00:00.000Z', 'pw-bob-first'],
      ['boblater0000001', 'Bob@x.com', '2026-01-02 00:00:00.000Z', 'pw-bob-later'],
      ['carolold0000001', 'carol@x.com', '2026-01-01 00:00:00.000Z', 'pw-carol-old'],
      ['carolver0000001', 'CAROL@x.com', '2026-01-03 00:00:00.000Z', 'pw-carol-verified', true],
      ['squatter0000001', 'house@meshwork.invalid', '2026-01-01 00:00:00.000Z', 'pw-squatter'],
    ]
    const old = await oldDatabase(dialect, '0003-exact-credits', async (db) => {
      for (const [id, email, created, password, verified] of accounts) {
        await oldUser(db, id, email, created, { password, verified })
        await withCredits(db, id)
      }
    })
    const server = await startTestServer(dialect, old)
    const login = async (identity: string, password: string) => {
      const res = await postJson(server, '/api/collections/users/auth-with-password', {
        identity,
        password,
      })
      return res.status === 200 ? (res.body.record as { id: string }).id : res.status
    }
    try {
      const db = server.core.database.db
      expect(await login('BOB@X.COM', 'pw-bob-first')).toBe('bobfirst0000001')
      expect(await login('Bob@x.com', 'pw-bob-later')).toBe(400) // the address is the first Bob's now
      expect(await login('carol@x.com', 'pw-carol-verified')).toBe('carolver0000001') // verified wins
      expect(await login('carol@x.com', 'pw-carol-old')).toBe(400)
      expect(await login('house@meshwork.invalid', 'pw-squatter')).toBe(400)

      const renamed = await listRenamedEmails(db)
      expect(renamed.map((r) => [r.user, r.original_email, r.reason, r.email]).sort()).toEqual([
        ['boblater0000001', 'Bob@x.com', 'lookalike', 'boblater0000001@renamed.meshwork.invalid'],
        ['carolold0000001', 'carol@x.com', 'lookalike', 'carolold0000001@renamed.meshwork.invalid'],
        [
          'squatter0000001',
          'house@meshwork.invalid',
          'reserved',
          'squatter0000001@renamed.meshwork.invalid',
        ],
      ])
      expect(await ensureHouseAccount(server.core)).not.toBe('squatter0000001')

      // The operator gives the later Bob an address of his own; a taken one is refused.
      await expect(setEmail(db, 'boblater0000001', 'BOB@x.com')).rejects.toThrow(/another account/)
      expect(await setEmail(db, 'boblater0000001', 'bob.two@x.com')).toBe('boblater0000001')
      expect(await login('Bob.Two@x.com', 'pw-bob-later')).toBe('boblater0000001')

      for (const [id] of accounts)
        expect(await balanceOf(server, id)).toMatchObject({ balance: 1000 })
      await expectAuditPasses(server)
    } finally {
      await server.stop()
    }
  })
})
