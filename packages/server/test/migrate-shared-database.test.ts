/**
 * Several deployments (or test runs) may share one PostgreSQL database, each in its own schema.
 * Kysely finds its bookkeeping table by listing every table of the database; a schema dropped by
 * someone else at that moment failed the listing ("schema ... does not exist", in a parallel
 * worker) and with it the coordinator's start (seen in CI). Nothing has run yet: it is tried again.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDatabase, type Database, type Db } from '../src/db/database.ts'
import { MigrationError, migrateToLatest } from '../src/db/migrate.ts'
import { randomString } from '../src/tools/ids.ts'

const url = process.env.TEST_DATABASE_URL

/**
 * Fails the next `times` listings of the tables (they read pg_attribute) the way a concurrent
 * DROP SCHEMA of `dropped` does. Kysely's migrator ignores query plugins: this is at the driver.
 */
function droppedDuringListing(dropped: string, times: number): () => void {
  let left = times
  const query = pg.Client.prototype.query
  pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
    const text = typeof config === 'string' ? config : (config as { text?: string })?.text
    if (left > 0 && text?.includes('pg_attribute')) {
      left--
      const err = Object.assign(new Error(`schema "${dropped}" does not exist`), { code: '3F000' })
      return Promise.reject(err)
    }
    return (query as (...a: unknown[]) => unknown).call(this, config, ...rest)
  } as typeof query
  return () => (pg.Client.prototype.query = query)
}

describe.runIf(url)('[postgres] migrating in a database shared with other schemas', () => {
  let database: Database
  let dataDir: string
  const schema = `t_shared_${process.pid}_${randomString(6).toLowerCase()}`

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'meshwork-shared-'))
    database = await openDatabase({ url, dataDir, schema })
  })
  afterAll(async () => {
    await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(database.db)
    await database.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('another schema dropped while the tables are listed: tried again, and the schema is migrated', async () => {
    const restore = droppedDuringListing('t_someone_else', 2)
    const ran = await migrateToLatest(database.db, schema).finally(restore)
    expect(ran).toContain('0001-init')
    const { rows } = await sql<{
      n: number
    }>`SELECT count(*)::int AS n FROM ${sql.id(schema)}.users`.execute(database.db)
    expect(rows[0].n).toBe(0)
  })

  it('our own schema missing is not retried, nor a listing that keeps failing', async () => {
    let restore = droppedDuringListing(schema, 1)
    await expect(migrateToLatest(database.db, schema).finally(restore)).rejects.toBeInstanceOf(
      MigrationError,
    )
    restore = droppedDuringListing('t_someone_else', 3)
    await expect(migrateToLatest(database.db, schema).finally(restore)).rejects.toBeInstanceOf(
      MigrationError,
    )
  })
  it('migrations run without the timeouts that bound requests (db/postgres-pool.ts)', async () => {
    const show = async (db: Db) =>
      (await sql<{ statement_timeout: string }>`SHOW statement_timeout`.execute(db)).rows[0]
    expect(await show(database.db)).toEqual({ statement_timeout: '5s' })
    expect(await database.withoutTimeouts(show)).not.toEqual({ statement_timeout: '5s' })
  })
})
