/**
 * @module Small DDL helpers shared by migrations, so both dialects get the same storage rules:
 * text-like values are TEXT NOT NULL DEFAULT '', numbers DOUBLE PRECISION, exact integers (credits
 * in units) BIGINT, booleans INTEGER 0/1 (the filter compiler relies on these).
 */
import { sql, SqliteAdapter } from 'kysely'
import type { Db, Dialect } from './database.ts'

export type ColumnKind = 'text' | 'number' | 'integer' | 'bool' | 'json'

/** Which engine a Kysely instance talks to (migrations get no Database wrapper). */
export function dialectOf(db: Db): Dialect {
  return db.getExecutor().adapter instanceof SqliteAdapter ? 'sqlite' : 'postgres'
}
export type ColumnSpec = [name: string, kind: ColumnKind]

export async function createTable(db: Db, table: string, columns: ColumnSpec[]): Promise<void> {
  let builder = db.schema.createTable(table).addColumn('id', 'text', (c) => c.primaryKey())
  for (const [name, kind] of columns) {
    if (kind === 'number') {
      builder = builder.addColumn(name, 'double precision', (c) => c.notNull().defaultTo(0))
    } else if (kind === 'integer') {
      builder = builder.addColumn(name, 'bigint', (c) => c.notNull().defaultTo(0))
    } else if (kind === 'bool') {
      builder = builder.addColumn(name, 'integer', (c) => c.notNull().defaultTo(0))
    } else if (kind === 'json') {
      builder = builder.addColumn(name, 'text', (c) => c.notNull().defaultTo('null'))
    } else {
      builder = builder.addColumn(name, 'text', (c) => c.notNull().defaultTo(''))
    }
  }
  await builder.execute()
}

export async function createIndex(db: Db, table: string, columns: string[], unique = false) {
  const name = `idx_${table}_${columns.join('_')}`
  let builder = db.schema.createIndex(name).on(table).columns(columns)
  if (unique) builder = builder.unique()
  await builder.execute()
}

export async function createView(db: Db, name: string, query: string) {
  await sql`CREATE VIEW ${sql.id(name)} AS ${sql.raw(query)}`.execute(db)
}
