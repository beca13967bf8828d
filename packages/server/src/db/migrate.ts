import { Migrator, type Migration, type MigrationProvider } from 'kysely'
import type { Db } from './database.ts'
import { init } from './migrations/0001-init.ts'
import { seed } from './migrations/0002-seed.ts'

/** Every migration, in order. Names sort in run order; never rename or edit a released one. */
const migrations: Record<string, Migration> = {
  '0001-init': init,
  '0002-seed': seed,
}

const provider: MigrationProvider = { getMigrations: async () => migrations }

export class MigrationError extends Error {}

/** Brings the schema up to date; run at every start, on SQLite and PostgreSQL alike. */
export async function migrateToLatest(db: Db, schema?: string): Promise<string[]> {
  // With a schema, the bookkeeping table lives there too (Kysely would otherwise find another
  // schema's copy when it looks for it).
  const migrator = new Migrator({ db, provider, ...(schema ? { migrationTableSchema: schema } : {}) })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw new MigrationError('Database migration failed', { cause: error })
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
