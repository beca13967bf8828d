/**
 * @module A database as an older release left it: migrated only up to a given migration, filled
 * with rows written the way that release wrote them, then handed to a real coordinator (which runs
 * the newer migrations at start). For tests of data migrations, on SQLite and PostgreSQL.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { hashPassword } from '../../src/core/auth/passwords.ts'
import { openDatabase, type Db } from '../../src/db/database.ts'
import { migrateTo } from '../../src/db/migrate.ts'
import { randomString } from '../../src/tools/ids.ts'
import type { DialectName } from '../harness.ts'

export interface OldDatabase {
  dataDir: string
  databaseSchema?: string
}

/** Creates the database at `lastMigration`, lets `fill` write old rows, and closes it. */
export async function oldDatabase(
  dialect: DialectName,
  lastMigration: string,
  fill: (db: Db) => Promise<void>,
): Promise<OldDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshwork-old-'))
  const databaseSchema =
    dialect === 'postgres'
      ? `t_old_${process.pid}_${Date.now().toString(36)}_${randomString(4).toLowerCase()}`
      : undefined
  const database = await openDatabase({
    url: dialect === 'postgres' ? process.env.TEST_DATABASE_URL : undefined,
    dataDir,
    schema: databaseSchema,
  })
  try {
    await migrateTo(database.db, lastMigration, databaseSchema)
    await fill(database.db)
  } finally {
    await database.close()
  }
  return { dataDir, databaseSchema }
}

/** A users row as the sign-up of any release stores it (password 'password123' unless given). */
export async function oldUser(
  db: Db,
  id: string,
  email: string,
  created: string,
  opts: { password?: string; verified?: boolean } = {},
) {
  await db
    .insertInto('users')
    .values({
      id,
      email,
      emailVisibility: 0,
      verified: opts.verified ? 1 : 0,
      password: await hashPassword(opts.password ?? 'password123'),
      tokenKey: randomString(50),
      name: email.split('@')[0],
      created,
      updated: created,
    })
    .execute()
}
