/**
 * A coordinator process killed (-9) at some moment and started again: what the crash leaves
 * behind. Each case is a bug found by a sweep of kill points: it failed before its fix. The kill
 * points are chosen by what the process is about to do (a statement it is about to run), never by
 * timing.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import pg from 'pg'
import type PocketBase from 'pocketbase'
import { afterEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/db/database.ts'
import { dialects, signUp, startTestServer, type DialectName } from '../harness.ts'
import { modelId } from '../fixtures.ts'
import { postJson, servingNode, waitUntil } from '../support/network.ts'
import { expectAuditPasses } from '../support/ledger.ts'
import { clientAt, freePort, signUpAt } from '../support/cluster.ts'

const src = (file: string) => fileURLToPath(new URL(`../../src/${file}`, import.meta.url))

/**
 * A child process that migrates the SQLite database in `dataDir` (up to `upTo`, or all) and kills
 * itself (SIGKILL) just before running the first statement whose SQL and parameters contain
 * `killAt`. Resolves with the signal it ended with (null: it finished).
 */
async function migrateAndDie(
  dataDir: string,
  killAt: string | null,
  upTo?: string,
): Promise<string | null> {
  const dir = mkdtempSync(join(tmpdir(), 'meshwork-migrate-child-'))
  const script = join(dir, 'migrate.mts')
  writeFileSync(
    script,
    `import { openDatabase } from ${JSON.stringify(src('db/database.ts'))}
import { migrateTo } from ${JSON.stringify(src('db/migrate.ts'))}
const killAt = process.env.KILL_AT || null
const database = await openDatabase({ dataDir: process.env.DATA_DIR })
const executor = database.db.getExecutor()
const db = database.db.withPlugin({
  transformQuery(args) {
    const c = executor.compileQuery(args.node, args.queryId)
    if (killAt && (c.sql + ' ' + JSON.stringify(c.parameters)).includes(killAt))
      process.kill(process.pid, 'SIGKILL')
    return args.node
  },
  async transformResult(args) {
    return args.result
  },
})
await migrateTo(db, process.env.UP_TO || undefined)
await database.close()
`,
  )
  try {
    const child = fork(script, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, DATA_DIR: dataDir, KILL_AT: killAt ?? '', UP_TO: upTo ?? '' },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    })
    let errors = ''
    child.stderr!.on('data', (d) => (errors = (errors + d).slice(-2000)))
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
      child.once('exit', (c, s) => resolve([c, s])),
    )
    if (signal === null && code !== 0) throw new Error(`migration child failed: ${errors}`)
    return signal
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe('[sqlite] a coordinator killed while it migrates the schema', () => {
  // Kysely ran SQLite migrations statement by statement (its adapter says SQLite's DDL is not
  // transactional): killed half-way, the next start ran the migration again over what was made
  // and failed for ever ("table "users" already exists", "duplicate column name").
  it.each([
    ['a fresh database, in the middle of the first migration', 'create table "requests"', null],
    [
      'a fresh database, after a migration that commits its own transaction, before it is recorded',
      '"0004-email-case"',
      null,
    ],
    [
      'an upgrade, after the new columns were added, before the migration is recorded',
      '"0070-approx-sizes"',
      '0060-api-keys',
    ],
  ])('%s: the next start migrates and runs', async (_what, killAt, upgradeFrom) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshwork-migrate-kill-'))
    try {
      if (upgradeFrom) expect(await migrateAndDie(dataDir, null, upgradeFrom)).toBeNull()
      expect(await migrateAndDie(dataDir, killAt)).toBe('SIGKILL')
      const server = await startTestServer('sqlite', { dataDir })
      try {
        const db = server.core.database.db
        const applied = await db.selectFrom('kysely_migration').select('name').execute()
        expect(applied.map((r) => r.name)).toContain('0070-approx-sizes')
        // The schema is whole: the last migration's column and the seed are there.
        const models = await db.selectFrom('models').select(['name', 'approx_size_bytes']).execute()
        expect(models.length).toBeGreaterThan(0)
        await expectAuditPasses(server)
      } finally {
        await server.close()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('a migration killed half-way leaves the database as it was before it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshwork-migrate-kill-'))
    try {
      expect(await migrateAndDie(dataDir, null, '0060-api-keys')).toBeNull()
      expect(await migrateAndDie(dataDir, '"0070-approx-sizes"')).toBe('SIGKILL')
      const database = await openDatabase({ dataDir })
      try {
        const applied = await database.db.selectFrom('kysely_migration').select('name').execute()
        expect(applied.map((r) => r.name)).not.toContain('0070-approx-sizes')
        const { rows } = await sql<{
          name: string
        }>`SELECT name FROM pragma_table_info('models')`.execute(database.db)
        expect(rows.map((c) => c.name)).not.toContain('approx_size_bytes')
      } finally {
        await database.close()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

/**
 * A coordinator as a process of its own (support/coordinator-process.ts, configured from the
 * environment like `npm start`) that kills itself (SIGKILL) just before it runs the first
 * statement whose SQL matches `killAt` (a regular expression): better-sqlite3's statements and pg's queries are wrapped
 * before the server loads. Restartable on the same data directory (or schema) and port.
 */
class KillableCoordinator {
  child: ChildProcess | null = null
  url = ''
  private exited: Promise<string | null> = Promise.resolve(null)
  readonly dir = mkdtempSync(join(tmpdir(), 'meshwork-killable-'))
  constructor(private env: NodeJS.ProcessEnv) {}

  async start(killAt: string | null = null): Promise<void> {
    const script = join(this.dir, 'killable.mts')
    writeFileSync(
      script,
      `import { createRequire } from 'node:module'
const require = createRequire(${JSON.stringify(fileURLToPath(import.meta.url))})
const killAt = process.env.KILL_AT ? new RegExp(process.env.KILL_AT) : null
const die = (text) => {
  if (killAt && typeof text === 'string' && killAt.test(text)) process.kill(process.pid, 'SIGKILL')
}
const Sqlite = require('better-sqlite3')
const probe = new Sqlite(':memory:')
const statement = Object.getPrototypeOf(probe.prepare('select 1'))
probe.close()
for (const method of ['run', 'all', 'get', 'iterate']) {
  const original = statement[method]
  statement[method] = function (...args) {
    die(this.source)
    return original.apply(this, args)
  }
}
const pg = require('pg')
const query = pg.Client.prototype.query
pg.Client.prototype.query = function (config, ...rest) {
  die(typeof config === 'string' ? config : config?.text)
  return query.call(this, config, ...rest)
}
await import(${JSON.stringify(fileURLToPath(new URL('../support/coordinator-process.ts', import.meta.url)))})
`,
    )
    const child = fork(script, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...this.env, KILL_AT: killAt ?? '' },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    })
    this.child = child
    let errors = ''
    child.stderr!.on('data', (d) => (errors = (errors + d).slice(-4000)))
    this.exited = new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)))
    const ready = await new Promise<{ url: string }>((resolve, reject) => {
      child.on('message', (m: { type: string; url: string }) => m.type === 'ready' && resolve(m))
      child.once('exit', (code) => reject(new Error(`coordinator exited (${code}): ${errors}`)))
    })
    this.url = ready.url
  }

  /** Resolves with the signal the process ended with, once it ended. */
  ended(): Promise<string | null> {
    return this.exited
  }

  async kill(): Promise<void> {
    const child = this.child
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await this.exited
  }

  client(): PocketBase {
    return clientAt(this.url)
  }

  async post(path: string, body: unknown, token?: string) {
    const res = await fetch(new URL(path, this.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
      body: JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }

  signUp(name: string): Promise<PocketBase> {
    return signUpAt(this.url, name)
  }
}

const started: KillableCoordinator[] = []
const leftovers: { dirs: string[]; schemas: string[] } = { dirs: [], schemas: [] }
afterEach(async () => {
  for (const c of started.splice(0)) {
    await c.kill()
    rmSync(c.dir, { recursive: true, force: true })
  }
  for (const dir of leftovers.dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  for (const schema of leftovers.schemas.splice(0)) {
    const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL })
    await client.connect()
    try {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    } finally {
      await client.end()
    }
  }
})

/** A killable coordinator alone (no Redis) on SQLite, or on PostgreSQL in a schema of its own. */
async function killable(dialect: DialectName): Promise<KillableCoordinator> {
  const dir = mkdtempSync(join(tmpdir(), 'meshwork-killable-data-'))
  const schema = `t_killable_${process.pid}_${Date.now().toString(36)}`
  leftovers.dirs.push(dir)
  if (dialect === 'postgres') leftovers.schemas.push(schema)
  const c = new KillableCoordinator({
    ...process.env,
    DATABASE_URL: dialect === 'postgres' ? process.env.TEST_DATABASE_URL : '',
    MESHWORK_DATABASE_SCHEMA: dialect === 'postgres' ? schema : '',
    REDIS_URL: '',
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    MESHWORK_DATA_DIR: join(dir, 'data'),
    MESHWORK_WEB_DIST: join(dir, 'no-web'),
    MESHWORK_LOCAL_NODE: '0',
    MESHWORK_SIGNUP_LIMIT: '0',
    MESHWORK_CHAT_RATE_LIMIT: '0',
    MESHWORK_LINK_FLOW_LIMIT: '0',
  })
  started.push(c)
  return c
}

describe.each(dialects)(
  '[%s] a coordinator killed while an owner approves a device link',
  (dialect) => {
    // The approval claimed the flow, created the node, issued its credential and marked the flow
    // approved in four separate writes: killed in between, the flow stayed "approving" (the owner's
    // next approval was refused as an invalid token, the device waited until the flow expired) and
    // a node that no device could ever use stayed on the owner's list.
    it.each([
      ['insert into "_node_credentials"'],
      ['update "_link_flows" set "status" = \\S+, "node"'],
    ])(
      'killed before `%s`: the owner approves again, the device gets its node, no stray node',
      async (killAt) => {
        const c = await killable(dialect)
        await c.start(killAt)
        const owner = await c.signUp('linker')
        const ownerId = owner.authStore.record!.id
        const flow = (await c.post('/api/auth/start-flow', { device_name: 'Crashing box' }))
          .body as {
          state_token: string
          device_secret: string
        }
        // The approval dies with the process.
        await expect(
          c.post(
            '/api/auth/complete-flow',
            { state_token: flow.state_token, user_info: {} },
            owner.authStore.token,
          ),
        ).rejects.toThrow()
        expect(await c.ended()).toBe('SIGKILL')
        await c.start()
        const again = await c.post(
          '/api/auth/complete-flow',
          { state_token: flow.state_token, user_info: {} },
          owner.authStore.token,
        )
        expect(again.status).toBe(200)
        const waited = await c.post('/api/auth/wait-flow', flow)
        expect(waited.status).toBe(200)
        expect(waited.body).toMatchObject({ node_id: again.body.node_id })
        expect(typeof waited.body.credential).toBe('string')
        const nodes = await owner.collection('nodes').getFullList({ filter: `user = "${ownerId}"` })
        expect(nodes.map((n) => n.id)).toEqual([again.body.node_id])
      },
    )
  },
)

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL

describe.runIf(redisUrl && databaseUrl)(
  '[postgres] a scaled-out coordinator killed with node sockets',
  () => {
    // Scaled out, a starting process leaves nodes alone (others may hold their sockets), and only the
    // process holding a node's socket ever wrote it offline. Killed, its nodes stayed stored online
    // for ever when their agents did not come back: the model was listed as served, and every send
    // for it was accepted, held credits, waited for the node and failed.
    it('a node whose process died and that never came back is stored offline by the survivors', async () => {
      const network = {
        heartbeatTimeoutMs: 1000,
        lastSeenRefreshMs: 300,
        leaseTtlMs: 1500,
        takeoverIntervalMs: 300,
      }
      const a = await startTestServer('postgres', { redisUrl }, { network })
      const shared = {
        redisUrl,
        databaseSchema: a.core.config.databaseSchema,
        dataDir: a.core.config.dataDir,
      }
      const b = await startTestServer('postgres', shared, { network })
      try {
        const stories = await modelId(a)
        const { node } = await servingNode(a, stories)
        const statusOf = async () =>
          (
            await b.core.database.db
              .selectFrom('nodes')
              .select('status')
              .where('id', '=', node.nodeId)
              .executeTakeFirstOrThrow()
          ).status
        await waitUntil(async () => (await statusOf()) === 'online', 10_000, 'node online')
        // A dies (its bus first: nothing more reaches anyone), its node with it: nothing writes the
        // node's row, as after a SIGKILL.
        await a.core.bus.close()
        await a.close()
        node.kill()
        await waitUntil(async () => (await statusOf()) === 'offline', 20_000, 'node stored offline')
        const pb = await signUp(b, 'late')
        const conversation = await pb.collection('conversations').create({ title: 'Late' })
        const sent = await postJson(
          b,
          '/api/chat/send',
          { conversation_id: conversation.id, model_id: stories, prompt: 'Anyone?' },
          pb.authStore.token,
        )
        expect(sent.status).toBe(400)
        expect(String(sent.body.message)).toMatch(/currently unavailable/)
      } finally {
        await b.stop()
      }
    })
  },
)
