/**
 * @module Exact credits: every money column becomes a BIGINT count of thousandths of a credit
 * ("units"), the model multiplier thousandths too, and requests get `cost` (units charged). Existing
 * values are rounded to the nearest thousandth (half away from zero). Then each balance is
 * reconciled with its rows: a difference no larger than what rounding can explain (one unit per
 * row) gets a ledger row of its own ("Rounding to exact credits"), so balance = sum of rows holds
 * exactly; a larger one is left for the audit to report. Totals are recomputed from the rows and
 * holds from the open requests' reserves. Safe to re-run: a column already BIGINT is left alone.
 * Frozen once released.
 */
import { sql, type Migration } from 'kysely'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'
import type { Db } from '../database.ts'
import { dialectOf } from '../ddl.ts'

const SCALE = 1000

const moneyColumns: Array<[table: string, column: string]> = [
  ['user_balances', 'balance'],
  ['user_balances', 'held'],
  ['user_balances', 'total_earned'],
  ['user_balances', 'total_spent'],
  ['user_credit_txs', 'amount'],
  ['user_credit_txs', 'balance_after'],
  ['requests', 'reserved'],
  ['models', 'credit_multiplier'],
]

// As the view was created by 0001; it reads models.credit_multiplier, so it is rebuilt around the change.
const availableModelsView = `SELECT m.id AS id, m.name AS name, m.display_name AS display_name,
  m.description AS description, m.credit_multiplier AS credit_multiplier, m.sort_order AS sort_order,
  (SELECT COUNT(*) FROM node_models nm JOIN nodes n ON n.id = nm.node
    WHERE nm.model = m.id AND nm.is_serving = 1 AND n.is_active = 1
      AND n.status IN ('online', 'busy')) AS node_count
  FROM models m WHERE m.is_active = 1`

// The ledger's types as of this migration (later types do not exist in old data).
const signs: Record<string, number> = {
  credit_admin: 1,
  debit_admin: -1,
  credit_inference_request: 1,
  debit_inference_request: -1,
}

export const exactCredits: Migration = {
  async up(db: Db) {
    const dialect = dialectOf(db)
    // Kysely runs migrations in a transaction already (database.ts); one run by hand may not be.
    if (!db.isTransaction) await db.transaction().execute((trx) => convert(trx, dialect))
    else await convert(db, dialect)
  },
}

async function convert(db: Db, dialect: 'sqlite' | 'postgres') {
  await sql`DROP VIEW IF EXISTS available_models`.execute(db)
  for (const [table, column] of moneyColumns) {
    if ((await columnType(db, dialect, table, column)) === 'bigint') continue
    if (dialect === 'postgres') {
      await sql`ALTER TABLE ${sql.table(table)}
        ALTER COLUMN ${sql.id(column)} DROP DEFAULT,
        ALTER COLUMN ${sql.id(column)} TYPE BIGINT USING ROUND(CAST(${sql.id(column)} AS NUMERIC) * ${sql.lit(SCALE)}),
        ALTER COLUMN ${sql.id(column)} SET DEFAULT 0`.execute(db)
    } else {
      const units = `${column}__units`
      await sql`ALTER TABLE ${sql.table(table)} ADD COLUMN ${sql.id(units)} BIGINT NOT NULL DEFAULT 0`.execute(
        db,
      )
      await sql`UPDATE ${sql.table(table)} SET ${sql.id(units)} = CAST(ROUND(${sql.id(column)} * ${sql.lit(SCALE)}) AS INTEGER)`.execute(
        db,
      )
      await sql`ALTER TABLE ${sql.table(table)} DROP COLUMN ${sql.id(column)}`.execute(db)
      await sql`ALTER TABLE ${sql.table(table)} RENAME COLUMN ${sql.id(units)} TO ${sql.id(column)}`.execute(
        db,
      )
    }
  }
  if (!(await columnType(db, dialect, 'requests', 'cost'))) {
    await db.schema
      .alterTable('requests')
      .addColumn('cost', 'bigint', (c) => c.notNull().defaultTo(0))
      .execute()
  }
  await sql`CREATE VIEW available_models AS ${sql.raw(availableModelsView)}`.execute(db)
  await reconcile(db)
}

/** 'bigint', 'double precision' (or another type), or null when the column does not exist. */
async function columnType(
  db: Db,
  dialect: string,
  table: string,
  column: string,
): Promise<string | null> {
  if (dialect === 'sqlite') {
    const { rows } = await sql<{
      name: string
      type: string
    }>`SELECT name, type FROM pragma_table_info(${table})`.execute(db)
    const found = rows.find((r) => r.name === column)
    return found ? found.type.toLowerCase() : null
  }
  const { rows } = await sql<{ data_type: string }>`SELECT data_type FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ${table} AND column_name = ${column}`.execute(
    db,
  )
  return rows[0]?.data_type.toLowerCase() ?? null
}

async function reconcile(db: Db) {
  const balances = await db.selectFrom('user_balances').select(['user', 'balance']).execute()
  for (const b of balances) {
    const user = String(b.user)
    const sums = await db
      .selectFrom('user_credit_txs')
      .select([
        'type',
        (eb) => eb.fn.sum<number>('amount').as('total'),
        (eb) => eb.fn.countAll<number>().as('rows'),
      ])
      .where('user', '=', user)
      .groupBy('type')
      .execute()
    let derived = 0
    let rows = 0
    let earned = 0
    let spent = 0
    for (const s of sums) {
      const total = Number(s.total ?? 0)
      derived += (signs[String(s.type)] ?? 0) * total
      rows += Number(s.rows)
      if (s.type === 'credit_inference_request') earned += total
      if (s.type === 'debit_inference_request') spent += total
    }
    const balance = Number(b.balance)
    const diff = balance - derived
    if (diff !== 0 && Math.abs(diff) <= rows) {
      const now = nowDate()
      await db
        .insertInto('user_credit_txs')
        .values({
          id: newRecordId(),
          user,
          type: diff > 0 ? 'credit_admin' : 'debit_admin',
          amount: Math.abs(diff),
          balance_after: balance,
          request: '',
          description: 'Rounding to exact credits',
          created: now,
          updated: now,
        })
        .execute()
    }
    const open = await db
      .selectFrom('requests')
      .select((eb) => eb.fn.sum<number>('reserved').as('total'))
      .where('user', '=', user)
      .where('status', 'in', ['pending', 'processing'])
      .executeTakeFirst()
    await db
      .updateTable('user_balances')
      .set({ total_earned: earned, total_spent: spent, held: Number(open?.total ?? 0) })
      .where('user', '=', user)
      .execute()
  }
}
