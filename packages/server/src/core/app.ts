/**
 * @module Builds the coordinator's core from a config: database (migrated), bus, records, auth and
 * the ledger's reactions. Each consumer gets the narrow service it needs, not this whole object.
 */
import { Redis } from 'ioredis'
import type { Config } from '../config.ts'
import { openDatabase, type Database } from '../db/database.ts'
import { migrateToLatest } from '../db/migrate.ts'
import { getOrCreateSetting, newSecret } from '../db/settings.ts'
import type { Bus } from '../tools/bus/bus.ts'
import { MemoryBus } from '../tools/bus/memory-bus.ts'
import { RedisBus } from '../tools/bus/redis-bus.ts'
import { createLimiters, type Limiters } from '../tools/rate-limiter.ts'
import { newRecordId } from '../tools/ids.ts'
import { createAuthService, type AuthService } from './auth/auth-service.ts'
import { LoginThrottle } from './auth/login-throttle.ts'
import type { TokenConfig } from './auth/tokens.ts'
import { registerConversationHooks } from './chat/conversation-activity.ts'
import { bindLedgerHooks } from './ledger/ledger-hooks.ts'
import { RecordEvents } from './records/record-events.ts'
import { RecordHooks } from './records/record-hooks.ts'
import { createRecordsService, type RecordsService } from './records/records-service.ts'

export interface CoreApp {
  config: Config
  /** This process, among the coordinators sharing the database (bus channels, leases). */
  processId: string
  database: Database
  bus: Bus
  /** Counted limits (login, sign-up, link flows, chat sends, ...): shared through Redis when
   * configured, so every process counts together; in memory otherwise. */
  limits: Limiters
  /** Scaled out: a Redis connection for shared state, its keys under the deployment's prefix. */
  redis?: Redis
  events: RecordEvents
  hooks: RecordHooks
  records: RecordsService
  auth: AuthService
  tokens: TokenConfig
  close(): Promise<void>
}

/** How long a command on the shared Redis connection may wait for its answer. */
const REDIS_COMMAND_TIMEOUT_MS = 1000

export async function createCore(config: Config): Promise<CoreApp> {
  const database = await openDatabase({
    url: config.databaseUrl,
    dataDir: config.dataDir,
    schema: config.databaseSchema,
  })
  // Without the pool's timeouts: a migration may rewrite a large table, or wait for another
  // process's migration (Kysely's migrator takes a lock).
  await database.withoutTimeouts((db) => migrateToLatest(db, config.databaseSchema))
  const secret = config.secret ?? (await getOrCreateSetting(database.db, 'auth_secret', newSecret))
  const tokens: TokenConfig = { secret, ttlSeconds: config.tokenTtlSeconds }
  const prefix = `${config.redisPrefix ?? 'meshwork'}:`
  const bus: Bus = config.redisUrl ? new RedisBus(config.redisUrl, prefix) : new MemoryBus()
  // Every command gives up after REDIS_COMMAND_TIMEOUT_MS: a Redis that keeps the connection open
  // and answers nothing (frozen, or cut off by a partition: nothing closes the socket) kept each
  // caller waiting until the thaw; a graceful shutdown (handing the queue off, giving the lease up)
  // never ended. A timed-out lease renewal is a failed one (leases.ts: nobody is taken for dead
  // for a TTL after it); the realtime directory answers 503. The bus has connections of its own.
  const redis = config.redisUrl
    ? new Redis(config.redisUrl, {
        keyPrefix: prefix,
        maxRetriesPerRequest: 2,
        commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      })
    : undefined
  // Connection errors surface through the calls that need Redis and health; ioredis reconnects.
  redis?.on('error', () => {})
  const events = new RecordEvents()
  const hooks = new RecordHooks()
  const records = createRecordsService(database, events, hooks)
  const limits = createLimiters({
    redisUrl: config.redisUrl,
    prefix: config.redisPrefix ?? 'meshwork',
  })
  // Scaled out, the first requests must already count together with the other processes.
  await limits.ready()
  const auth = createAuthService(
    database,
    records,
    tokens,
    new LoginThrottle(limits, config.loginThrottle),
  )

  bindLedgerHooks(hooks, config.initialCredits)

  registerConversationHooks(hooks)

  // Spec: a node cannot be switched on unless at least one of its models is serving.
  hooks.onClientUpdate(
    'nodes',
    async (db, existing, values): Promise<Record<string, { code: string; message: string }>> => {
      if (values.is_active !== 1 || Number(existing.is_active) === 1) return {}
      const serving = await db
        .selectFrom('node_models')
        .select('id')
        .where('node', '=', existing.id as string)
        .where('is_serving', '=', 1)
        .executeTakeFirst()
      if (serving) return {}
      return {
        is_active: {
          code: 'validation_no_serving_model',
          message: 'Node activation requires at least one serving model.',
        },
      }
    },
  )

  return {
    config,
    processId: newRecordId(),
    database,
    bus,
    redis,
    limits,
    events,
    hooks,
    records,
    auth,
    tokens,
    async close() {
      await bus.close()
      redis?.disconnect()
      await limits.close()
      await database.close()
    },
  }
}
