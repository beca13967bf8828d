/**
 * @module Decides whether one realtime subscriber may see one record event, with the rule the
 * subscription implies (view rule for `coll/id`, list rule for `coll/*`) plus its filter option.
 * Self-contained expressions are evaluated in memory, synchronously; ones that need other tables
 * run as SQL against a virtual row built from the event's snapshot, so deletes are checked on the
 * record as it was.
 */
import { sql, type RawBuilder } from 'kysely'
import type { Database } from '../../db/database.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import { FilterError } from '../../tools/filter/filter-error.ts'
import type { FilterExpr } from '../../tools/filter/parser.ts'
import type { Caller } from '../records/caller.ts'
import type { Row } from '../records/serialize.ts'
import {
  JoinSet,
  compileRecordFilter,
  evaluateRecordFilter,
  type QueryContext,
} from '../rules/record-query.ts'

/**
 * One expression (rule or filter, text or parsed) for one caller and one row, in memory: true or
 * false, or undefined when only the database can tell (then `holdsInDatabase`). Errors: false.
 */
export function holdsInMemory(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  expression: string | FilterExpr,
  row: Row,
  client: boolean,
): boolean | undefined {
  if (typeof expression === 'string' && !expression.trim()) return true
  try {
    return evaluateRecordFilter(collection.name, expression, row, context(database, caller), {
      client,
    })
  } catch (err) {
    if (err instanceof FilterError) return false
    throw err
  }
}

/** The same check as SQL against a virtual row of the event's snapshot. */
export async function holdsInDatabase(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  expression: string | FilterExpr,
  row: Row,
  client: boolean,
): Promise<boolean> {
  try {
    const joins = new JoinSet()
    const where = compileRecordFilter(
      collection.name,
      expression,
      context(database, caller),
      joins,
      { client },
    )
    const query = sql<{
      ok: number
    }>`SELECT 1 AS ok FROM (${virtualRow(collection, row)}) AS r ${joins.sql()} WHERE ${where}`
    const result = await query.execute(database.db)
    return result.rows.length > 0
  } catch (err) {
    if (err instanceof FilterError) return false
    throw err
  }
}

function context(database: Database, caller: Caller): QueryContext {
  return { dialect: database.dialect, auth: caller.auth, now: new Date() }
}

/** SELECT of the row's stored values with their column types, usable in place of the table. */
function virtualRow(collection: CollectionDef, row: Row): RawBuilder<unknown> {
  const columns: RawBuilder<unknown>[] = [sql`CAST(${String(row.id ?? '')} AS TEXT) AS id`]
  for (const field of collection.fields) {
    const value = row[field.name]
    const name = sql.id(field.name)
    if (field.type === 'number')
      columns.push(sql`CAST(${Number(value ?? 0)} AS DOUBLE PRECISION) AS ${name}`)
    else if (field.type === 'bool') {
      const b = value === true || value === 1 || value === '1' ? 1 : 0
      columns.push(sql`CAST(${b} AS INTEGER) AS ${name}`)
    } else
      columns.push(
        sql`CAST(${value === null || value === undefined ? '' : String(value)} AS TEXT) AS ${name}`,
      )
  }
  return sql`SELECT ${sql.join(columns)}`
}
