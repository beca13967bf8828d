/**
 * @module The coordinator's log: pino, one JSON object a line in production (or whenever stdout is
 * not a terminal), coloured lines in a terminal. `MESHWORK_LOG_LEVEL` (trace, debug, info, warn,
 * error, fatal, silent; default info; the test configs set warn) and `MESHWORK_LOG_FORMAT` (json | pretty)
 * override. A line written while an HTTP request is being handled carries that request's id
 * (`reqId`, the `X-Request-Id` the response carries too), wherever in the code it is written.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { pino, type DestinationStream, type Logger } from 'pino'
import pretty from 'pino-pretty'

const requestScope = new AsyncLocalStorage<string>()

/** Runs `work` with `id` as the request id of every line it logs (async continuations too). */
export function withRequestId<T>(id: string, work: () => T): T {
  return requestScope.run(id, work)
}

export interface LogOptions {
  level?: string
  format?: 'json' | 'pretty'
  /** Where lines go (tests); stdout by default. */
  destination?: DestinationStream
}

const levels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']

export function createLogger(options: LogOptions = {}): Logger {
  const env = process.env
  const asked = options.level ?? env.MESHWORK_LOG_LEVEL
  const level = asked && levels.includes(asked) ? asked : 'info'
  const format =
    options.format ??
    (env.MESHWORK_LOG_FORMAT === 'json' || env.MESHWORK_LOG_FORMAT === 'pretty'
      ? env.MESHWORK_LOG_FORMAT
      : env.NODE_ENV !== 'production' && process.stdout.isTTY
        ? 'pretty'
        : 'json')
  const base = {
    level,
    base: { pid: process.pid },
    mixin: () => {
      const reqId = requestScope.getStore()
      return reqId ? { reqId } : {}
    },
  }
  const destination =
    options.destination ??
    (format === 'pretty'
      ? pretty({ colorize: true, sync: true, ignore: 'pid,hostname' })
      : batchedLines(1))
  return pino(base, destination)
}

/** Most milliseconds a line waits in the batch before it is written. */
const BATCH_MS = 100
/** Where a JSON line's level number starts (`{"level":`); warn is 40, error 50, fatal 60. */
const LEVEL_AT = 9
const FOUR = '4'.charCodeAt(0)

/**
 * JSON lines to `dest` (stdout: 1) in batches: a write once 8 KB of lines are waiting (sonic-boom
 * takes at most 16 KB a write), else at most BATCH_MS after the first one. pino's default writes
 * whatever waits as soon as its last write is done: under load that was a write every few access
 * lines, and those writes and their callbacks took ~8 % of a small read's CPU (docs/performance.md,
 * "Records against the stack's ceiling"). pino writes out what is left when the process exits,
 * as it did before.
 */
export function batchedLines(dest: number | string): DestinationStream {
  const out = pino.destination({ dest, minLength: 8192, sync: false })
  let timer: NodeJS.Timeout | undefined
  const flush = () => {
    timer = undefined
    try {
      out.flush()
    } catch {
      // Ended: pino ends the stream when the event loop empties (beforeExit), this timer aside.
    }
  }
  return {
    write(line: string) {
      out.write(line)
      // Warnings and errors go out at once (with the lines before them), as people wait on them.
      if (line.charCodeAt(LEVEL_AT) >= FOUR) out.flush()
      else timer ??= setTimeout(flush, BATCH_MS).unref()
    },
  }
}

/** The process's log. */
export const log: Logger = createLogger()
