/**
 * @module A scaled-out deployment on one machine, for the load-balancer suite and `npm run chaos`:
 * N coordinator processes (coordinator-process.ts) on PostgreSQL + Redis behind a real nginx
 * (round-robin, nothing sticky), node agents as processes of their own (agent-process.ts) whose
 * sockets go through the balancer, and the checks every scenario ends with: no open request,
 * no credits held without an open request, the ledger audit.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import PocketBase from 'pocketbase'
import { linkDevice } from '@meshwork/node'
import { openDatabase, type Database } from '../../src/db/database.ts'
import { auditLedger, formatAudit } from '../../src/core/ledger/audit.ts'

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))

/** Every child started here, killed when this process exits however it exits. */
const children = new Map<ChildProcess, NodeJS.Signals>()
process.once('exit', () => {
  for (const [child, signal] of children)
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
})
/** nginx gets SIGTERM (its master then stops its workers); our node processes SIGKILL. */
const track = (child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL') => {
  children.set(child, signal)
  child.once('exit', () => children.delete(child))
  return child
}

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

export async function poll<T>(
  check: () => Promise<T> | T,
  timeoutMs: number,
  what: string,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value as NonNullable<T>
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** One coordinator process; restartable on the same port (the balancer's upstream list is fixed). */
/** An SDK client of the coordinator at `url` (requests of a test may overlap: none cancelled). */
export function clientAt(url: string): PocketBase {
  const pb = new PocketBase(url)
  pb.autoCancellation(false)
  return pb
}

/** A new user of the coordinator at `url`, signed in. */
export async function signUpAt(url: string, name: string): Promise<PocketBase> {
  const pb = clientAt(url)
  const email = `${name}-${Math.random().toString(36).slice(2, 10)}@example.com`
  await pb
    .collection('users')
    .create({ email, password: 'password123', passwordConfirm: 'password123', name })
  await pb.collection('users').authWithPassword(email, 'password123')
  return pb
}

function coordinatorLog(index: number): 'ignore' | number {
  const dir = process.env.CLUSTER_LOG_DIR
  return dir ? openSync(join(dir, `coordinator-${index}.log`), 'a') : 'ignore'
}

export class Coordinator {
  child: ChildProcess | null = null
  processId = ''
  constructor(
    readonly index: number,
    readonly port: number,
    private env: NodeJS.ProcessEnv,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** Started and listening (not while starting or stopping). */
  get running(): boolean {
    return (
      this.ready &&
      this.child !== null &&
      this.child.exitCode === null &&
      this.child.signalCode === null
    )
  }
  private ready = false

  async start(): Promise<void> {
    this.ready = false
    const child = track(
      fork(here('./coordinator-process.ts'), [], {
        execArgv: ['--import', 'tsx'],
        env: { ...this.env, PORT: String(this.port) },
        // CLUSTER_LOG_DIR=<dir>: each coordinator's log lines go to coordinator-<index>.log there.
        stdio: ['ignore', coordinatorLog(this.index), 'pipe', 'ipc'],
      }),
    )
    let errors = ''
    child.stderr!.on('data', (d) => (errors = (errors + d).slice(-4000)))
    this.child = child
    const ready = await new Promise<{ processId: string }>((resolve, reject) => {
      child.on(
        'message',
        (m: { type: string; processId: string }) => m.type === 'ready' && resolve(m),
      )
      child.once('exit', (code) =>
        reject(new Error(`coordinator ${this.index} exited (${code}): ${errors}`)),
      )
    })
    this.processId = ready.processId
    this.ready = true
  }

  /** kill -9: no drain, no goodbye; its lease lapses. */
  async kill(): Promise<void> {
    const child = this.child
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    this.ready = false
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGKILL')
    await exited
  }

  /**
   * SIGSTOP for `ms`, then SIGCONT: a process that seems dead (a long pause, a host that froze)
   * and then runs on, its lease lapsed meanwhile.
   */
  async pause(ms: number): Promise<void> {
    const child = this.child
    if (!child || !this.running) return
    this.ready = false
    child.kill('SIGSTOP')
    await new Promise((r) => setTimeout(r, ms))
    child.kill('SIGCONT')
    this.ready = child.exitCode === null && child.signalCode === null
  }

  /** SIGTERM: resolves with the exit code once it drained and exited. */
  async term(): Promise<number | null> {
    const child = this.child
    if (!child || !this.running) return null
    this.ready = false
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    child.kill('SIGTERM')
    return exited
  }

  /** Nodes whose sockets are on this process. */
  async nodes(): Promise<string[]> {
    const child = this.child
    if (!child || !this.running) return []
    return new Promise((resolve) => {
      const on = (m: { type: string; nodes: string[] }) => {
        if (m.type !== 'nodes') return
        child.off('message', on)
        resolve(m.nodes)
      }
      child.on('message', on)
      child.send({ type: 'nodes' })
    })
  }
}

/** A node agent process, its socket through the balancer. */
export class AgentProcess {
  child: ChildProcess | null = null
  readonly home = mkdtempSync(join(tmpdir(), 'meshwork-agent-'))
  constructor(
    readonly nodeId: string,
    private env: NodeJS.ProcessEnv,
  ) {}

  get running(): boolean {
    return (
      this.ready &&
      this.child !== null &&
      this.child.exitCode === null &&
      this.child.signalCode === null
    )
  }
  private ready = false

  async start(): Promise<void> {
    this.ready = false
    const child = track(
      fork(here('./agent-process.ts'), [], {
        execArgv: ['--import', 'tsx'],
        env: { ...this.env, NODE_HOME: this.home },
        stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      }),
    )
    this.child = child
    await new Promise<void>((resolve, reject) => {
      child.on('message', (m: { type: string }) => m.type === 'ready' && resolve())
      child.once('exit', (code) => reject(new Error(`agent exited (${code})`)))
    })
    this.ready = true
  }

  async kill(): Promise<void> {
    const child = this.child
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    this.ready = false
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGKILL')
    await exited
  }

  async term(): Promise<number | null> {
    const child = this.child
    if (!child || !this.running) return null
    this.ready = false
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    child.kill('SIGTERM')
    return exited
  }

  async stop(): Promise<void> {
    await this.kill()
    rmSync(this.home, { recursive: true, force: true })
  }
}

export interface ClusterOptions {
  coordinators: number
  databaseUrl: string
  redisUrl: string
  /** Extra environment for the coordinators. */
  env?: NodeJS.ProcessEnv
}

export interface Invariants {
  /** Requests still pending or processing. */
  open: number
  /** Users whose held credits differ from what their open requests reserve. */
  badHolds: string[]
  audit: string | null
}

export class Cluster {
  coordinators: Coordinator[] = []
  agents: AgentProcess[] = []
  url = ''
  db!: Database
  private nginx: ChildProcess | null = null
  private dir = mkdtempSync(join(tmpdir(), 'meshwork-cluster-'))
  readonly schema = `t_cluster_${process.pid}_${Date.now().toString(36)}`

  constructor(private options: ClusterOptions) {}

  async start(): Promise<void> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: '127.0.0.1',
      DATABASE_URL: this.options.databaseUrl,
      MESHWORK_DATABASE_SCHEMA: this.schema,
      REDIS_URL: this.options.redisUrl,
      MESHWORK_REDIS_PREFIX: `meshwork-${this.schema}`,
      MESHWORK_DATA_DIR: join(this.dir, 'data'),
      MESHWORK_WEB_DIST: join(this.dir, 'no-web'),
      MESHWORK_LOCAL_NODE: '0',
      MESHWORK_SIGNUP_LIMIT: '0',
      MESHWORK_CHAT_RATE_LIMIT: '0',
      MESHWORK_LINK_FLOW_LIMIT: '0',
      MESHWORK_TRUSTED_PROXIES: '127.0.0.1',
      MESHWORK_DRAIN_SECONDS: '20',
      ...this.options.env,
    }
    for (let i = 0; i < this.options.coordinators; i++)
      this.coordinators.push(new Coordinator(i, await freePort(), env))
    // The first one migrates the schema; the others start on it.
    await this.coordinators[0].start()
    await Promise.all(this.coordinators.slice(1).map((c) => c.start()))
    await this.startNginx()
    this.db = await openDatabase({ url: this.options.databaseUrl, schema: this.schema })
  }

  private async startNginx() {
    const dir = this.dir
    const port = await freePort()
    const upstreams = this.coordinators
      .map((c) => `    server 127.0.0.1:${c.port} max_fails=1 fail_timeout=2s;`)
      .join('\n')
    writeFileSync(
      join(dir, 'nginx.conf'),
      `daemon off;
pid ${dir}/nginx.pid;
error_log stderr crit;
events {}
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' ''; }
  # Round-robin, nothing sticky: every request may land on any coordinator.
  upstream coordinators {
${upstreams}
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://coordinators;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_buffering off;
      proxy_read_timeout 3600s;
      proxy_connect_timeout 2s;
      proxy_next_upstream error timeout;
    }
  }
}
`,
    )
    this.nginx = track(
      spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir, '-e', 'stderr'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      }),
      'SIGTERM',
    )
    let errors = ''
    this.nginx.stderr!.on('data', (d) => (errors += d))
    this.url = `http://127.0.0.1:${port}`
    await poll(
      async () => {
        if (this.nginx!.exitCode !== null) throw new Error(`nginx exited: ${errors}`)
        return fetch(`${this.url}/api/health`).then(
          (r) => r.ok,
          () => false,
        )
      },
      15_000,
      'nginx',
    )
  }

  client(url = this.url): PocketBase {
    return clientAt(url)
  }

  signUp(name: string): Promise<PocketBase> {
    return signUpAt(this.url, name)
  }

  async modelId(): Promise<string> {
    const row = await this.db.db
      .selectFrom('models')
      .select('id')
      .where('name', '=', 'stories260K')
      .executeTakeFirstOrThrow()
    return String(row.id)
  }

  /** Links a device for `owner` through the balancer and starts its agent process, serving `model`. */
  async addNode(
    owner: PocketBase,
    model: string,
    env: NodeJS.ProcessEnv = {},
  ): Promise<AgentProcess> {
    const linked = await linkDevice({
      server: this.url,
      deviceName: `sim-${this.agents.length}`,
      onApproveUrl: (url) => {
        const token = new URL(url).searchParams.get('token')!
        void fetch(`${this.url}/api/auth/complete-flow`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: owner.authStore.token },
          body: JSON.stringify({ state_token: token, user_info: {} }),
        })
      },
    })
    const agent = new AgentProcess(linked.nodeId, {
      ...process.env,
      SERVER: this.url,
      NODE_ID: linked.nodeId,
      NODE_CREDENTIAL: linked.credential,
      ...env,
    })
    await agent.start()
    this.agents.push(agent)
    const nm = await owner.collection('node_models').create({
      node: linked.nodeId,
      model,
      requested_download: true,
      requested_serving: true,
    })
    await poll(
      async () => (await owner.collection('node_models').getOne(nm.id)).is_serving,
      60_000,
      'node serving',
    )
    await owner
      .collection('nodes')
      .update(linked.nodeId, { is_active: true })
      .catch(() => {})
    return agent
  }

  /** The coordinator holding a node's socket. */
  async socketOf(nodeId: string): Promise<Coordinator | undefined> {
    for (const c of this.coordinators) if ((await c.nodes()).includes(nodeId)) return c
    return undefined
  }

  byProcess(processId: string): Coordinator | undefined {
    return this.coordinators.find((c) => c.processId === processId && c.running)
  }

  async request(id: string) {
    return this.db.db
      .selectFrom('requests')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  }

  async invariants(): Promise<Invariants> {
    const db = this.db.db
    const open = await db
      .selectFrom('requests')
      .select('id')
      .where('status', 'in', ['pending', 'processing'])
      .execute()
    const balances = await db.selectFrom('user_balances').select(['user', 'held']).execute()
    const reserved = await db
      .selectFrom('requests')
      .select(['user', (eb) => eb.fn.sum<number>('reserved').as('reserved')])
      .where('status', 'in', ['pending', 'processing'])
      .groupBy('user')
      .execute()
    const byUser = new Map(reserved.map((r) => [String(r.user), Number(r.reserved)]))
    const badHolds = balances
      .filter((b) => Number(b.held) !== (byUser.get(String(b.user)) ?? 0))
      .map((b) => `${b.user}: held ${b.held}, reserved ${byUser.get(String(b.user)) ?? 0}`)
    const report = await auditLedger(db)
    return { open: open.length, badHolds, audit: report.ok ? null : formatAudit(report) }
  }

  /** Waits until nothing is open (bounded), then answers the invariants. */
  async settle(timeoutMs = 60_000): Promise<Invariants> {
    await poll(
      async () => (await this.invariants()).open === 0,
      timeoutMs,
      'every request ended',
    ).catch(() => {})
    return this.invariants()
  }

  async stop(): Promise<void> {
    await Promise.all(this.agents.map((a) => a.stop()))
    await Promise.all(this.coordinators.map((c) => c.kill()))
    if (this.nginx && this.nginx.exitCode === null) {
      const exited = new Promise((r) => this.nginx!.once('exit', r))
      this.nginx.kill('SIGTERM')
      await exited
    }
    await this.db?.close()
    const client = new pg.Client({ connectionString: this.options.databaseUrl })
    await client.connect()
    try {
      await client.query(`DROP SCHEMA IF EXISTS "${this.schema}" CASCADE`)
    } finally {
      await client.end()
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}
