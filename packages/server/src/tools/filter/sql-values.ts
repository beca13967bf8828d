/**
 * @module SQL fragments for values that must behave the same on SQLite and PostgreSQL: typed
 * parameters (PostgreSQL infers nothing), number-to-text, ASCII lower-casing and constants.
 */
import { sql, type RawBuilder } from 'kysely'
import type { CommonKind, Scalar, ValueKind } from './values.ts'

export type SqlDialect = 'sqlite' | 'postgres'

const upper = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
const lower = 'abcdefghijklmnopqrstuvwxyz'

export const sqlTrue = sql`(1=1)`
export const sqlFalse = sql`(1=0)`

export function sqlBoolean(value: boolean): RawBuilder<unknown> {
  return value ? sqlTrue : sqlFalse
}

/** A bound parameter with an explicit type, so PostgreSQL never has to guess it. */
export function literalSql(
  kind: ValueKind | CommonKind,
  value: Scalar,
  dialect: SqlDialect,
): RawBuilder<unknown> {
  if (value === null || (typeof value === 'number' && !Number.isFinite(value))) {
    if (dialect === 'sqlite') return sql`NULL`
    return kind === 'number' ? sql`CAST(NULL AS DOUBLE PRECISION)` : sql`CAST(NULL AS TEXT)`
  }
  if (dialect === 'sqlite') return sql`${value}`
  if (kind === 'bool') return sql`CAST(${Number(value)} AS INTEGER)`
  if (kind === 'number') return sql`CAST(${Number(value)} AS DOUBLE PRECISION)`
  // PostgreSQL text can't hold NUL; such a value (only from a request body) can't match anything stored.
  return sql`CAST(${String(value).replaceAll('\0', '\uFFFD')} AS TEXT)`
}

/** Renders a number column as text the way JavaScript's String(n) does (5 not 5.0). */
export function numberToTextSql(
  expr: RawBuilder<unknown>,
  dialect: SqlDialect,
): RawBuilder<unknown> {
  if (dialect === 'postgres') return sql`CAST(${expr} AS TEXT)`
  return sql`(CASE WHEN ${expr} = CAST(${expr} AS INTEGER) THEN CAST(CAST(${expr} AS INTEGER) AS TEXT) ELSE CAST(${expr} AS TEXT) END)`
}

/** ASCII-only lower-casing on both engines (SQLite's LOWER() ignores non-ASCII letters). */
export function lowerSql(expr: RawBuilder<unknown>, dialect: SqlDialect): RawBuilder<unknown> {
  if (dialect === 'sqlite') return sql`LOWER(${expr})`
  return sql`translate(${expr}, ${sql.lit(upper)}, ${sql.lit(lower)})`
}

/** Escapes `\`, `%`, `_` of a column value so it is matched literally inside a LIKE pattern. */
export function likeEscapeSql(expr: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`replace(replace(replace(${expr}, '\\', '\\\\'), '%', '\\%'), '_', '\\_')`
}
