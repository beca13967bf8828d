import { Migrator, type Migration, type MigrationProvider } from 'kysely'
import type { Db } from './database.ts'
import { init } from './migrations/0001-init.ts'
import { seed } from './migrations/0002-seed.ts'
import { exactCredits } from './migrations/0003-exact-credits.ts'
import { emailCase } from './migrations/0004-email-case.ts'
import { nodeModelRetry } from './migrations/0020-node-model-retry.ts'
import { addChatModels } from './migrations/0021-chat-models.ts'
import { nodeVerification } from './migrations/0030-node-verification.ts'
import { requestLeases } from './migrations/0045-request-leases.ts'
import { chatUx } from './migrations/0050-chat-ux.ts'
import { apiKeys } from './migrations/0060-api-keys.ts'
import { approxSizes } from './migrations/0070-approx-sizes.ts'
import { idempotencyKeys } from './migrations/0080-idempotency-keys.ts'
import { spotChecks } from './migrations/0090-spot-checks.ts'
import { deletionHolds } from './migrations/0100-deletion-holds.ts'
import { pendingEarnings } from './migrations/0031-pending-earnings.ts'

/** Every migration, in order. Names sort in run order; never rename or edit a released one. */
const migrations: Record<string, Migration> = {
  '0001-init': init,
  '0002-seed': seed,
  '0003-exact-credits': exactCredits,
  '0004-email-case': emailCase,
  '0020-node-model-retry': nodeModelRetry,
  '0021-chat-models': addChatModels,
  '0030-node-verification': nodeVerification,
  '0045-request-leases': requestLeases,
  '0050-chat-ux': chatUx,
  '0060-api-keys': apiKeys,
  '0070-approx-sizes': approxSizes,
  '0080-idempotency-keys': idempotencyKeys,
  '0090-spot-checks': spotChecks,
  '0100-deletion-holds': deletionHolds,
  // Kysely runs migrations in name order, whatever their order here.
  '0031-pending-earnings': pendingEarnings,
}

const provider: MigrationProvider = { getMigrations: async () => migrations }

export class MigrationError extends Error {}

/** Brings the schema up to date; run at every start, on SQLite and PostgreSQL alike. */
export async function migrateToLatest(db: Db, schema?: string): Promise<string[]> {
  return migrateTo(db, undefined, schema)
}

/** Runs the migrations up to and including `last` (tests of a migration start from the one before). */
export async function migrateTo(
  db: Db,
  last: string | undefined,
  schema?: string,
): Promise<string[]> {
  // With a schema, the bookkeeping table lives there too (Kysely would otherwise find another
  // schema's copy when it looks for it).
  // Helpers number their migrations in separate ranges and land in any order, so a database may
  // have run 0060 before 0003 arrives: pending ones then run in name order after the others.
  const migrator = new Migrator({
    db,
    provider,
    allowUnorderedMigrations: true,
    ...(schema ? { migrationTableSchema: schema } : {}),
  })
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await (last ? migrator.migrateTo(last) : migrator.migrateToLatest())
    if (!error)
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
    if (attempt < 3 && otherSchemaDropped(error, schema)) continue
    throw new MigrationError('Database migration failed', { cause: error })
  }
}

/**
 * Kysely looks for its bookkeeping table by listing every table of the database, before any
 * migration runs. On PostgreSQL a schema dropped meanwhile by someone else (another deployment
 * sharing the database, a test cleaning up) can fail that listing with "schema ... does not
 * exist" (in a parallel worker): nothing was done yet, so it is tried again.
 */
function otherSchemaDropped(error: unknown, schema: string | undefined): boolean {
  const e = error as { code?: unknown; message?: unknown }
  return e.code === '3F000' && !(schema && String(e.message).includes(`"${schema}"`))
}
