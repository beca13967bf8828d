/**
 * @module The connection pool Kysely gets on PostgreSQL, and how long anything may wait on it.
 * A PostgreSQL that stops answering (a network partition, a frozen host: the connection stays
 * open and nothing comes back) cannot say so, and pg waits for ever by default: a request that
 * picked such a connection never got an answer, and the pool's connections stayed checked out.
 * So every wait is bounded (the numbers below); what goes over fails to its caller, which the API
 * answers with a 503. Migrations and the admin commands, long work an operator starts, run
 * without these bounds (`bounded: false`).
 */
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely'
import pg from 'pg'
import { log } from '../tools/log.ts'

/** A connection (TCP and PostgreSQL's start-up) or a free slot in the pool: pg's default waits
 * for ever. */
export const CONNECT_TIMEOUT_MS = 5000
/** PostgreSQL ends a statement that runs longer (waits for a lock held for ever, a runaway
 * query) with an error, and nothing of it commits. Requests run statements of milliseconds. */
export const STATEMENT_TIMEOUT_MS = 5000
/**
 * The client gives up on a statement with no answer at all after this long: the server is silent
 * (a partition, a frozen host), since a working server ends it at STATEMENT_TIMEOUT_MS. Longer
 * than that, so the server's own answer, and its clean rollback, comes first.
 */
export const QUERY_TIMEOUT_MS = 7000
/** PostgreSQL ends a session that sits in an open transaction this long (its client frozen, or cut
 * off by a partition): the locks it holds would stop every other process's writes to those rows. */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000

/** A statement that got no answer within QUERY_TIMEOUT_MS; its connection is dropped. */
export class QueryTimeoutError extends Error {
  /** Node's code for a socket that timed out: the API answers it with a 503. */
  readonly code = 'ETIMEDOUT'
  constructor(ms: number) {
    super(`PostgreSQL did not answer within ${ms} ms`)
    this.name = 'QueryTimeoutError'
  }
}

export interface PostgresPoolOptions {
  schema?: string
  max: number
  /** False: no statement, idle-in-transaction or query timeout (migrations, admin commands). */
  bounded: boolean
}

export function postgresPool(url: string, options: PostgresPoolOptions): PostgresPool {
  const timeouts = options.bounded
    ? {
        statement_timeout: STATEMENT_TIMEOUT_MS,
        idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
      }
    : {}
  // The search path and the timeouts are start-up parameters of every connection, so no query can
  // run before them.
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    ...timeouts,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  })
  // An idle connection that breaks (PostgreSQL restarted, the network cut) is dropped by the pool;
  // without a listener its 'error' event would end the process.
  // Its message and code only: pg's error carries the whole client (several KB a line).
  pool.on('error', (err) =>
    log.error(
      { err: { message: err.message, code: (err as { code?: string }).code } },
      'PostgreSQL connection lost',
    ),
  )
  // The pool listens only to idle connections: one that breaks while checked out (between a
  // transaction's statements, or just as its query failed) emitted 'error' with no listener, an
  // uncaught exception that ended the process. Its query (or the next one) fails and is reported
  // by its caller; the pool drops the connection when it comes back.
  pool.on('connect', (client) => client.on('error', () => {}))
  if (!options.bounded) return pool
  return {
    connect: async () => new BoundedClient(await pool.connect(), QUERY_TIMEOUT_MS),
    end: () => pool.end(),
  }
}

/**
 * A checked-out connection whose statements each wait at most `ms` for their answer. After one
 * timed out, the connection's state is unknown (the statement may still run, a COMMIT may have
 * committed): nothing more is sent on it, not even the ROLLBACK Kysely tries, and the pool drops
 * it when it is released (pg destroys the socket, the server rolls back what was open when it
 * sees the close, or after IDLE_IN_TRANSACTION_TIMEOUT_MS). Reusing it instead would queue the
 * next caller's statements behind the lost one, inside its transaction.
 */
class BoundedClient implements PostgresPoolClient {
  private broken: QueryTimeoutError | null = null

  constructor(
    private readonly client: pg.PoolClient,
    private readonly ms: number,
  ) {}

  query<R>(sql: string, parameters: readonly unknown[]): Promise<PostgresQueryResult<R>>
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>
  query<R>(
    sql: string | PostgresCursor<R>,
    parameters: readonly unknown[] = [],
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // Kysely passes a cursor only when streaming is configured, which it is not.
    if (typeof sql !== 'string') throw new Error('Cursors are not supported')
    return this.run<R>(sql, parameters)
  }

  release() {
    this.client.release(this.broken ?? undefined)
  }

  private async run<R>(sql: string, parameters: readonly unknown[]) {
    if (this.broken) throw this.broken
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.broken = new QueryTimeoutError(this.ms)
        reject(this.broken)
      }, this.ms)
    })
    try {
      // The race keeps a handler on the query: its late failure (the socket destroyed) is no
      // unhandled rejection.
      const answer = this.client.query(sql, [...parameters])
      return (await Promise.race([answer, late])) as unknown as PostgresQueryResult<R>
    } finally {
      clearTimeout(timer)
    }
  }
}
