/**
 * @module Opens the one database the coordinator uses: an SQLite file by default, PostgreSQL when a
 * URL is given. Everything above this file talks to Kysely and never to a driver.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import {
  Kysely,
  PostgresDialect,
  SqliteAdapter,
  SqliteDialect,
  sql,
  type CompiledQuery,
} from 'kysely'
import pg from 'pg'
import { likeMatch, type LikeBudget } from '../tools/filter/values.ts'
import { CONNECT_TIMEOUT_MS, postgresPool } from './postgres-pool.ts'

export type Dialect = 'sqlite' | 'postgres'

// The records engine builds its SQL dynamically from declared collections, so the table types are open.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = Kysely<any>

export interface Database {
  db: Db
  dialect: Dialect
  /** Statements run through Kysely so far (transactions' BEGIN and COMMIT included); metrics. */
  readonly statements: { count: number }
  /**
   * SQLite only: runs a compiled read at once on the statement cache, without Kysely's executor
   * (its connection mutex, plugins and promise chain cost a getOne more than the query itself).
   * Undefined while a transaction is open on the connection: a read must not see its uncommitted
   * writes, so it goes through Kysely and waits its turn. `firstOnly`: at most the first row
   * (SQLite stops there instead of stepping on to find the end: ~0.6 us less for one row by id).
   */
  readNow?(query: CompiledQuery, firstOnly?: boolean): Record<string, unknown>[] | undefined
  /** A cheap round trip, for health checks. */
  ping(): Promise<boolean>
  /**
   * Runs `work` without the statement and query timeouts of `db` (db/postgres-pool.ts): on
   * PostgreSQL, on a connection of its own, closed after it. For migrations, which may rewrite
   * large tables or wait for another process's migration. SQLite has no such timeouts.
   */
  withoutTimeouts<T>(work: (db: Db) => Promise<T>): Promise<T>
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
  /**
   * PostgreSQL: no statement or query timeout (db/postgres-pool.ts). For the admin commands, long
   * work an operator starts and can stop: an audit of a large ledger takes longer than a request
   * may.
   */
  noTimeouts?: boolean
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.url
    ? openPostgres(options.url, options.schema, options.noTimeouts ?? false)
    : openSqlite(options)
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
  overrideLike(driver)
  const statements = { count: 0 }
  const cache = withStatementCache(driver)
  const db: Db = new Kysely({
    dialect: new TransactionalDdlSqliteDialect({ database: cache }),
    log: countStatements(statements),
  })
  return {
    db,
    dialect: 'sqlite',
    statements,
    readNow(query, firstOnly) {
      if (driver.inTransaction) return undefined
      const stmt = cache.prepare(query.sql)
      if (!stmt.reader) throw new Error('readNow runs reads only')
      statements.count++
      if (!firstOnly) return stmt.all(query.parameters) as Record<string, unknown>[]
      const row = stmt.first(query.parameters)
      return row ? [row] : []
    },
    ping: async () => {
      try {
        driver.prepare('SELECT 1').get()
        return true
      } catch {
        return false
      }
    },
    withoutTimeouts: (work) => work(db),
    close: () => db.destroy(),
  }
}

/**
 * SQLite's DDL is transactional, but Kysely's adapter says it is not, so its migrator ran each
 * migration's statements, and the row recording it, one by one: a process killed in between left
 * a half-made schema that the next start tried to make again ("table already exists", "duplicate
 * column name") and could never start. Saying so makes the migrator run pending migrations and
 * their bookkeeping in one transaction, as on PostgreSQL.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true
  }
}

class TransactionalDdlSqliteDialect extends SqliteDialect {
  override createAdapter(): SqliteAdapter {
    return new TransactionalDdlSqliteAdapter()
  }
}

async function openPostgres(
  url: string,
  schema: string | undefined,
  noTimeouts: boolean,
): Promise<Database> {
  // COUNT(*) and SUM() come back as int8/numeric strings by default; our numbers fit in a double.
  pg.types.setTypeParser(20, (v) => Number(v))
  pg.types.setTypeParser(1700, (v) => Number(v))
  if (schema) {
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`Invalid schema name: ${schema}`)
    const setup = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    })
    await setup.connect()
    try {
      await setup.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    } finally {
      await setup.end()
    }
  }
  const bounded = !noTimeouts
  const pool = postgresPool(url, { schema, max: 10, bounded })
  const statements = { count: 0 }
  const db: Db = new Kysely({
    dialect: new PostgresDialect({ pool }),
    log: countStatements(statements),
  })
  return {
    db,
    dialect: 'postgres',
    statements,
    ping: async () => {
      try {
        await sql`SELECT 1`.execute(db)
        return true
      } catch {
        return false
      }
    },
    async withoutTimeouts(work) {
      if (!bounded) return work(db)
      const unbounded: Db = new Kysely({
        dialect: new PostgresDialect({
          pool: postgresPool(url, { schema, max: 1, bounded: false }),
        }),
        log: countStatements(statements),
      })
      try {
        return await work(unbounded)
      } finally {
        await unbounded.destroy()
      }
    },
    close: () => db.destroy(),
  }
}

/** Kysely's log hook sees every statement, errors included, at the cost of two clock reads. */
function countStatements(statements: { count: number }) {
  return () => {
    statements.count++
  }
}

/**
 * SQLite runs on the event loop (better-sqlite3 is synchronous) and its LIKE takes O(text x
 * pattern) time: one list request of `prompt ~ "aaa…b"` over a few long stored prompts held the
 * loop for a third of a second. So LIKE (which `~` compiles to) is replaced by the filter
 * language's own matcher, with the same semantics (SQLite's: ASCII case-insensitive, `_` one
 * character), charged against one work budget per statement; past it the statement fails with a
 * FilterError, which the records API answers with a 400. PostgreSQL runs queries in its own
 * process, so its LIKE is left as it is.
 */
const statementLikeBudget: LikeBudget = { left: 0 }
/** About 15 ms of matching: 8 million characters read or compared by one statement's LIKEs. */
export const SQLITE_LIKE_BUDGET = 8_000_000

function overrideLike(driver: SqliteDatabase.Database) {
  const like = (pattern: unknown, value: unknown, escape: unknown) => {
    if (pattern === null || value === null) return null
    return likeMatch(
      String(value),
      String(pattern),
      statementLikeBudget,
      escape === undefined ? null : String(escape),
    )
      ? 1
      : 0
  }
  driver.function('like', { deterministic: true }, (pattern: unknown, value: unknown) =>
    like(pattern, value, undefined),
  )
  driver.function(
    'like',
    { deterministic: true },
    (pattern: unknown, value: unknown, escape: unknown) => like(pattern, value, escape),
  )
}

function withLikeBudget<T>(run: () => T): T {
  statementLikeBudget.left = SQLITE_LIKE_BUDGET
  return run()
}

/** Kysely prepares every query anew; the records engine repeats the same SQL text, so keep up to
 * `size` prepared statements (better-sqlite3 statements are reusable once a run finishes). */
function withStatementCache(driver: SqliteDatabase.Database, size = 500) {
  const cache = new Map<string, CachedStatement>()
  // The most recently used text: asked again, it is already last in the order.
  let last: string | undefined
  return {
    close: () => driver.close(),
    prepare(text: string) {
      let stmt = cache.get(text)
      if (stmt && text === last) return stmt
      if (stmt) {
        cache.delete(text)
      } else {
        stmt = cachedStatement(driver, text)
        // A cached statement knows its columns; after a schema change they may be others.
        if (!stmt.reader && /^\s*(CREATE|ALTER|DROP)\b/i.test(text)) {
          cache.clear()
          last = undefined
          return stmt
        }
        if (cache.size >= size) cache.delete(cache.keys().next().value!)
      }
      cache.set(text, stmt)
      last = text
      return stmt
    },
  }
}

type CachedStatement = Pick<SqliteDatabase.Statement, 'reader' | 'run' | 'iterate'> & {
  all(parameters: readonly unknown[]): unknown[]
  /** The first row, if any (reads only). */
  first(parameters: readonly unknown[]): Record<string, unknown> | undefined
}

/** Rows as objects built here from better-sqlite3's raw arrays: a third cheaper than its own
 * object rows (a 50-row page: ~60 us instead of ~95 us), the same shape for every caller. */
function cachedStatement(driver: SqliteDatabase.Database, text: string): CachedStatement {
  const stmt = driver.prepare(text)
  if (!stmt.reader) {
    return {
      reader: false,
      run: (...args) => withLikeBudget(() => stmt.run(...args)),
      iterate: (...args) => withLikeBudget(() => stmt.iterate(...args)),
      all: (parameters) => withLikeBudget(() => stmt.all(parameters)),
      first: () => {
        throw new Error('first() reads rows')
      },
    }
  }
  const makeRow = rowMaker(stmt.columns().map((c) => c.name))
  stmt.raw(true)
  return {
    reader: true,
    run: (...args) => withLikeBudget(() => stmt.run(...args)),
    // Kysely streams through iterate (nothing here does); it gets a statement of its own.
    iterate: (...args) => withLikeBudget(() => driver.prepare(text).iterate(...args)),
    all(parameters) {
      const rows = withLikeBudget(() => stmt.all(parameters)) as unknown[][]
      const out = new Array<Record<string, unknown>>(rows.length)
      for (let i = 0; i < rows.length; i++) out[i] = makeRow(rows[i])
      return out
    },
    first(parameters) {
      statementLikeBudget.left = SQLITE_LIKE_BUDGET // withLikeBudget, without a closure
      const values = stmt.get(parameters) as unknown[] | undefined
      return values && makeRow(values)
    },
  }
}

/**
 * Makes a statement's row objects from its raw values: one object literal with the columns as
 * its keys, in order (the same object a loop of assignments makes, later duplicates winning in
 * the first one's place), compiled once per statement. A loop over the column names stored
 * each value through V8's generic keyed store (~40 ns a column); the literal gives every row of
 * a statement one shape at once. The names are JSON-quoted into the source.
 */
function rowMaker(columns: string[]): (values: unknown[]) => Record<string, unknown> {
  const fields = columns.map((name, i) => `${JSON.stringify(name)}: v[${i}]`)
  return new Function('v', `return { ${fields.join(', ')} }`) as (
    values: unknown[],
  ) => Record<string, unknown>
}
