/**
 * @module Builds the coordinator's core from a config: database (migrated), bus, records, auth and
 * the ledger's reactions. Each consumer gets the narrow service it needs, not this whole object.
 */
import type { Config } from '../config.ts'
import { openDatabase, type Database } from '../db/database.ts'
import { migrateToLatest } from '../db/migrate.ts'
import { getOrCreateSetting, newSecret } from '../db/settings.ts'
import type { Bus } from '../tools/bus/bus.ts'
import { MemoryBus } from '../tools/bus/memory-bus.ts'
import { RedisBus } from '../tools/bus/redis-bus.ts'
import { createAuthService, type AuthService } from './auth/auth-service.ts'
import { LoginThrottle } from './auth/login-throttle.ts'
import type { TokenConfig } from './auth/tokens.ts'
import { applyEntry } from './ledger/ledger-entry.ts'
import { RecordEvents } from './records/record-events.ts'
import { RecordHooks } from './records/record-hooks.ts'
import { createRecordsService, type RecordsService } from './records/records-service.ts'

export interface CoreApp {
  config: Config
  database: Database
  bus: Bus
  events: RecordEvents
  hooks: RecordHooks
  records: RecordsService
  auth: AuthService
  tokens: TokenConfig
  close(): Promise<void>
}

export async function createCore(config: Config): Promise<CoreApp> {
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, schema: config.databaseSchema })
  await migrateToLatest(database.db, config.databaseSchema)
  const secret = config.secret ?? (await getOrCreateSetting(database.db, 'auth_secret', newSecret))
  const tokens: TokenConfig = { secret, ttlSeconds: config.tokenTtlSeconds }
  const bus: Bus = config.redisUrl ? new RedisBus(config.redisUrl) : new MemoryBus()
  const events = new RecordEvents()
  const hooks = new RecordHooks()
  const records = createRecordsService(database, events, hooks)
  const auth = createAuthService(database, records, tokens, new LoginThrottle())

  // Every new user starts with a balance, in the same transaction as the user record.
  hooks.onAfterCreate('users', async (trx, _collection, user) => {
    await applyEntry(trx, {
      user: user.id as string,
      type: 'credit_admin',
      amount: config.initialCredits,
      description: 'Initial credits',
    })
  })

  // Spec: a node cannot be switched on unless at least one of its models is serving.
  hooks.onClientUpdate('nodes', async (db, existing, values): Promise<Record<string, { code: string; message: string }>> => {
    if (values.is_active !== 1 || Number(existing.is_active) === 1) return {}
    const serving = await db
      .selectFrom('node_models')
      .select('id')
      .where('node', '=', existing.id as string)
      .where('is_serving', '=', 1)
      .executeTakeFirst()
    if (serving) return {}
    return { is_active: { code: 'validation_no_serving_model', message: 'Node activation requires at least one serving model.' } }
  })

  return {
    config,
    database,
    bus,
    events,
    hooks,
    records,
    auth,
    tokens,
    async close() {
      await bus.close()
      await database.close()
    },
  }
}
