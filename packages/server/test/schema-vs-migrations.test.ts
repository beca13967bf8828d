/**
 * The collection definitions (src/core/collections/schema.ts) and the migrated database must agree,
 * on both dialects: every declared field is a column of the storage kind the records engine
 * expects (src/db/ddl.ts), and every column is declared (or listed below as server-only, with why).
 * Adding a field to schema.ts without a migration, or a column without a definition, fails here.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { collections } from '../src/core/collections/registry.ts'
import type { FieldDef } from '../src/core/collections/collection-def.ts'
import { openDatabase, type Database } from '../src/db/database.ts'
import { migrateToLatest } from '../src/db/migrate.ts'
import { randomString } from '../src/tools/ids.ts'
import { dialects } from './harness.ts'

type Kind = 'text' | 'number' | 'integer' | 'bool'

/** Columns only the server reads and writes, never part of a record (so not in schema.ts). */
const serverOnly: Record<string, string[]> = {
  // The coordinator process that owns the request's lease (migration 0045, scaled out), and the
  // client's idempotency key of the send that stored it (migration 0080).
  requests: ['lease_owner', 'idempotency_key'],
}

/** The storage kind ddl.ts gives each field type. */
function expectedKind(field: FieldDef): Kind {
  if (field.type === 'number') return field.scale ? 'integer' : 'number'
  if (field.type === 'bool') return 'bool'
  return 'text'
}

/** What a column's declared type means, per dialect (SQLite views report no types). */
function kindOf(declared: string): Kind | undefined {
  const t = declared.toLowerCase()
  if (t === '') return undefined
  if (t === 'bigint') return 'integer'
  if (t === 'integer') return 'bool'
  if (t.startsWith('double') || t === 'real' || t === 'numeric') return 'number'
  if (t === 'text' || t.startsWith('character')) return 'text'
  return undefined
}

describe.each(dialects)('[%s] schema.ts and the migrated database agree', (dialect) => {
  let database: Database
  let dataDir: string
  const schema =
    dialect === 'postgres' ? `t_schema_${process.pid}_${randomString(6).toLowerCase()}` : undefined

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'meshwork-schema-'))
    database = await openDatabase({
      url: dialect === 'postgres' ? process.env.TEST_DATABASE_URL : undefined,
      dataDir,
      schema,
    })
    await migrateToLatest(database.db, schema)
  })
  afterAll(async () => {
    if (schema) await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(database.db)
    await database.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  async function columns(table: string): Promise<Map<string, string>> {
    if (dialect === 'sqlite') {
      const { rows } = await sql<{ name: string; type: string }>`
        SELECT name, type FROM pragma_table_info(${table})`.execute(database.db)
      return new Map(rows.map((r) => [r.name, r.type]))
    }
    const { rows } = await sql<{ name: string; type: string }>`
      SELECT column_name AS name, data_type AS type FROM information_schema.columns
      WHERE table_schema = ${schema} AND table_name = ${table}`.execute(database.db)
    return new Map(rows.map((r) => [r.name, r.type]))
  }

  it.each(collections.map((c) => [c.name, c] as const))('%s', async (_name, collection) => {
    const found = await columns(collection.name)
    expect(found.size, `table or view ${collection.name} exists`).toBeGreaterThan(0)
    const declared = [
      'id',
      ...collection.fields.map((f) => f.name),
      ...(serverOnly[collection.name] ?? []),
    ]
    expect([...found.keys()].sort(), 'columns are exactly the declared fields').toEqual(
      [...declared].sort(),
    )
    let typed = 0
    for (const field of collection.fields) {
      const kind = kindOf(found.get(field.name) ?? '')
      if (kind === undefined && collection.type === 'view') continue
      // A view's counts (COUNT(*)) are integers, which a plain number field reads exactly.
      const countInView =
        collection.type === 'view' && kind === 'integer' && expectedKind(field) === 'number'
      if (!countInView)
        expect({ field: field.name, kind }).toEqual({
          field: field.name,
          kind: expectedKind(field),
        })
      typed++
    }
    // Tables (and PostgreSQL's views) report a type for every column: all of them were checked.
    if (collection.type !== 'view' || dialect === 'postgres')
      expect(typed).toBe(collection.fields.length)
  })
})
