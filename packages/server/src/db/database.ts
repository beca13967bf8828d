/**
 * @module Opens the one database the coordinator uses: an SQLite file by default, PostgreSQL when a
 * URL is given. Everything above this file talks to Kysely and never to a driver.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely'
import pg from 'pg'

export type Dialect = 'sqlite' | 'postgres'

// The records engine builds its SQL dynamically from declared collections, so the table types are open.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = Kysely<any>

export interface Database {
  db: Db
  dialect: Dialect
  /** A cheap round trip, for health checks. */
  ping(): Promise<boolean>
  close(): Promise<void>
}

export interface DatabaseOptions {
  /** postgres://... ; when absent, SQLite in dataDir. */
  url?: string
  dataDir?: string
  /** PostgreSQL schema to use (created if missing); lets tests run in isolation. */
  schema?: string
  /** SQLite file name inside dataDir, or ':memory:'. */
  file?: string
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.url ? openPostgres(options.url, options.schema) : openSqlite(options)
}

function openSqlite(options: DatabaseOptions): Database {
  const file = options.file ?? 'meshwork.db'
  let path = file
  if (file !== ':memory:') {
    const dir = options.dataDir ?? './data'
    mkdirSync(dir, { recursive: true })
    path = join(dir, file)
  }
  const driver = new SqliteDatabase(path)
  // WAL lets readers proceed during a write; NORMAL sync is durable across app crashes in WAL mode.
  driver.pragma('journal_mode = WAL')
  driver.pragma('synchronous = NORMAL')
  driver.pragma('busy_timeout = 5000')
  driver.pragma('foreign_keys = OFF')
  const db: Db = new Kysely({ dialect: new SqliteDialect({ database: withStatementCache(driver) }) })
  return {
    db,
    dialect: 'sqlite',
    ping: async () => {
      try {
        driver.prepare('SELECT 1').get()
        return true
      } catch {
        return false
      }
    },
    close: () => db.destroy(),
  }
}

async function openPostgres(url: string, schema?: string): Promise<Database> {
  // COUNT(*) and SUM() come back as int8/numeric strings by default; our numbers fit in a double.
  pg.types.setTypeParser(20, (v) => Number(v))
  pg.types.setTypeParser(1700, (v) => Number(v))
  if (schema) {
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`Invalid schema name: ${schema}`)
    const setup = new pg.Client({ connectionString: url })
    await setup.connect()
    try {
      await setup.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    } finally {
      await setup.end()
    }
  }
  // The search path is a startup option of every connection, so no query can run before it.
  const pool = new pg.Pool({ connectionString: url, max: 10, ...(schema ? { options: `-c search_path=${schema}` } : {}) })
  const db: Db = new Kysely({ dialect: new PostgresDialect({ pool }) })
  return {
    db,
    dialect: 'postgres',
    ping: async () => {
      try {
        await sql`SELECT 1`.execute(db)
        return true
      } catch {
        return false
      }
    },
    close: () => db.destroy(),
  }
}

/** Kysely prepares every query anew; the records engine repeats the same SQL text, so keep up to
 * `size` prepared statements (better-sqlite3 statements are reusable once a run finishes). */
function withStatementCache(driver: SqliteDatabase.Database, size = 500) {
  const cache = new Map<string, SqliteDatabase.Statement>()
  return {
    close: () => driver.close(),
    prepare(text: string) {
      let stmt = cache.get(text)
      if (stmt) {
        cache.delete(text)
      } else {
        stmt = driver.prepare(text)
        if (cache.size >= size) cache.delete(cache.keys().next().value!)
      }
      cache.set(text, stmt)
      return stmt
    },
  }
}
