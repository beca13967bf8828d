/**
 * @module Test support: the schema's tables (storage rules of db/ddl.ts) on an in-memory SQLite
 * and, when TEST_DATABASE_URL is set, in a throwaway PostgreSQL schema, seeded with the same rows.
 */
import SqliteDatabase from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely'
import pg from 'pg'
import { collections } from '../collections/schema.ts'
import type { Dialect } from './query-context.ts'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type TestDb = Kysely<any>

export interface TestDatabase {
  dialect: Dialect
  db: TestDb
  close(): Promise<void>
}

export type Rows = Record<string, Record<string, unknown>[]>

export function testDialects(): Dialect[] {
  return process.env.TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite']
}

export async function openTestDatabase(dialect: Dialect, rows: Rows): Promise<TestDatabase> {
  const opened =
    dialect === 'sqlite' ? openSqlite() : await openPostgres(process.env.TEST_DATABASE_URL!)
  await createSchema(opened.db)
  for (const [table, list] of Object.entries(rows)) {
    const collection = collections.find((c) => c.name === table)!
    for (const row of list) {
      const full: Record<string, unknown> = {}
      for (const field of collection.fields) {
        const kind = field.type === 'number' || field.type === 'bool' ? 0 : ''
        const value = row[field.name]
        // Fixtures speak the API's units; a scaled number is stored as integer units.
        full[field.name] =
          typeof value === 'boolean'
            ? value
              ? 1
              : 0
            : field.scale && typeof value === 'number'
              ? Math.round(value * field.scale)
              : (value ?? kind)
      }
      full.id = row.id
      await opened.db.insertInto(table).values(full).execute()
    }
  }
  return opened
}

function openSqlite(): TestDatabase {
  const db: TestDb = new Kysely({
    dialect: new SqliteDialect({ database: new SqliteDatabase(':memory:') }),
  })
  return { dialect: 'sqlite', db, close: () => db.destroy() }
}

async function openPostgres(url: string): Promise<TestDatabase> {
  const schema = `filter_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  await admin.end()
  const pool = new pg.Pool({ connectionString: url, max: 2, options: `-c search_path=${schema}` })
  const db: TestDb = new Kysely({ dialect: new PostgresDialect({ pool }) })
  return {
    dialect: 'postgres',
    db,
    close: async () => {
      await sql`DROP SCHEMA ${sql.id(schema)} CASCADE`.execute(db)
      await db.destroy()
    },
  }
}

async function createSchema(db: TestDb) {
  for (const collection of collections) {
    if (collection.type === 'view') continue
    let builder = db.schema
      .createTable(collection.name)
      .addColumn('id', 'text', (c) => c.primaryKey())
    for (const field of collection.fields) {
      if (field.type === 'number') {
        const type = field.scale ? 'bigint' : 'double precision'
        builder = builder.addColumn(field.name, type, (c) => c.notNull().defaultTo(0))
      } else if (field.type === 'bool') {
        builder = builder.addColumn(field.name, 'integer', (c) => c.notNull().defaultTo(0))
      } else {
        builder = builder.addColumn(field.name, 'text', (c) => c.notNull().defaultTo(''))
      }
    }
    await builder.execute()
  }
  await sql`CREATE VIEW available_models AS SELECT m.id AS id, m.name AS name,
    m.display_name AS display_name, m.description AS description,
    m.credit_multiplier AS credit_multiplier, m.sort_order AS sort_order,
    (SELECT COUNT(*) FROM node_models nm JOIN nodes n ON n.id = nm.node
      WHERE nm.model = m.id AND nm.is_serving = 1 AND n.is_active = 1
        AND n.status IN ('online', 'busy')) AS node_count
    FROM models m WHERE m.is_active = 1`.execute(db)
}
