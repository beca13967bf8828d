import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openDatabase, type Database } from './database.ts'

describe('SQLite rows through the statement cache', () => {
  let dir: string
  let database: Database
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'meshwork-db-'))
    database = await openDatabase({ dataDir: dir })
    await sql`CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, note TEXT)`.execute(database.db)
    await sql`INSERT INTO t VALUES ('a', 1, NULL), ('b', 2, 'two')`.execute(database.db)
  })
  afterEach(async () => {
    await database.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const selectAll = () =>
    sql<Record<string, unknown>>`SELECT * FROM t ORDER BY id`.execute(database.db)

  it('come back as objects keyed by column, the same on every run of a cached statement', async () => {
    const expected = [
      { id: 'a', n: 1, note: null },
      { id: 'b', n: 2, note: 'two' },
    ]
    expect((await selectAll()).rows).toEqual(expected)
    expect((await selectAll()).rows).toEqual(expected)
    const none = await sql`SELECT id FROM t WHERE id = ${'zzz'}`.execute(database.db)
    expect(none.rows).toEqual([])
  })

  it('follow a schema change made after the statement was cached', async () => {
    await selectAll()
    await sql`ALTER TABLE t ADD COLUMN extra TEXT DEFAULT 'x'`.execute(database.db)
    expect((await selectAll()).rows[0]).toEqual({ id: 'a', n: 1, note: null, extra: 'x' })
    await sql`ALTER TABLE t DROP COLUMN n`.execute(database.db)
    expect((await selectAll()).rows[1]).toEqual({ id: 'b', note: 'two', extra: 'x' })
  })

  it('keep writes, RETURNING and counts working', async () => {
    const inserted = await sql<{
      id: string
    }>`INSERT INTO t (id, n) VALUES ('c', 3) RETURNING id, n`.execute(database.db)
    expect(inserted.rows).toEqual([{ id: 'c', n: 3 }])
    const updated = await sql`UPDATE t SET n = n + 1`.execute(database.db)
    expect(updated.numAffectedRows).toBe(3n)
    const counted = await sql<{ c: number }>`SELECT COUNT(*) AS c FROM t`.execute(database.db)
    expect(counted.rows).toEqual([{ c: 3 }])
  })

  it('read at once outside transactions, never seeing a transaction in progress', async () => {
    const query = sql`SELECT n FROM t WHERE id = ${'a'}`.compile(database.db)
    const before = database.statements.count
    expect(database.readNow!(query)).toEqual([{ n: 1 }])
    expect(database.statements.count).toBe(before + 1)
    await database.db.transaction().execute(async (trx) => {
      await sql`UPDATE t SET n = 99 WHERE id = 'a'`.execute(trx)
      // Another request's read meanwhile: not on the open transaction, it waits its turn.
      expect(database.readNow!(query)).toBeUndefined()
    })
    expect(database.readNow!(query)).toEqual([{ n: 99 }])
  })
})
