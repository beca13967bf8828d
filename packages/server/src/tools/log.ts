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
  const logger = pino(base, destination)
  ours.add(logger)
  return logger
}

/** Loggers made by createLogger: their options are known, so requestLine can write their lines. */
const ours = new WeakSet<Logger>()
const { lsCacheSym, timeSym, chindingsSym, endSym, streamSym, needsMetadataGsym } = pino.symbols
/** Strings pino writes as they are, between quotes (its asString escapes nothing in them). */
const plainString = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/**
 * `log.info({ reqId, method, route, status, ms }, 'request')`, the access line of every request,
 * written here with the same bytes as pino would write them: pino spends a few microseconds a
 * line building its object (the mixin, Object.assign, a loop over the keys and their types),
 * ~10 % of a small read's CPU. For a logger createLogger made (its options known: no formatters,
 * serializers for these keys, redaction or hooks; its mixin adds only `reqId`, which comes first
 * here anyway) and plain values; anything else goes through pino (log.test.ts compares both).
 */
export function requestLine(
  log: Logger,
  reqId: string,
  method: string,
  route: string,
  status: number,
  ms: number,
): void {
  const internals = log as unknown as Record<symbol, unknown>
  const stream = internals[streamSym] as DestinationStream & Record<symbol, unknown>
  if (
    !ours.has(log) ||
    stream[needsMetadataGsym] === true ||
    !plainString.test(reqId) ||
    !plainString.test(method) ||
    !plainString.test(route) ||
    !Number.isFinite(status) ||
    !Number.isFinite(ms)
  )
    return log.info({ reqId, method, route, status, ms }, 'request')
  if (!log.isLevelEnabled('info')) return
  const start = (internals[lsCacheSym] as Record<number, string>)[30]
  const time = (internals[timeSym] as () => string)()
  stream.write(
    `${start}${time}${internals[chindingsSym] as string},"reqId":"${reqId}","method":"${method}","route":"${route}","status":${status},"ms":${ms},"msg":"request"${internals[endSym] as string}`,
  )
}

/** Most milliseconds a line waits in the batch before it is written. */
const BATCH_MS = 100
/** Where a JSON line's level number starts (`{"level":`); warn is 40, error 50, fatal 60. */
const LEVEL_AT = 9
const FOUR = '4'.charCodeAt(0)

/** Characters of waiting lines that make a batch (lines are mostly ASCII: about 8 KB). */
const BATCH_CHARS = 8192

/**
 * JSON lines to `dest` (stdout: 1) in batches: a write once 8 KB of lines are waiting, else at
 * most BATCH_MS after the first one. pino's default writes whatever waits as soon as its last
 * write is done: under load that was a write every few access lines, and those writes and their
 * callbacks took ~8 % of a small read's CPU (docs/performance.md, "Records against the stack's
 * ceiling"). The lines wait here, not in sonic-boom's buffer: sonic-boom measures the UTF-8
 * length of its whole last buffer on every write, so batching there cost a scan of up to 16 KB
 * per line (~5 % of a getOne's CPU). The timer holds the process while lines wait, so they are
 * written before it ends on its own; on `exit` (process.exit) they are written synchronously.
 */
export function batchedLines(dest: number | string): DestinationStream {
  const out = pino.destination({ dest, sync: false })
  let waiting = ''
  let timer: NodeJS.Timeout | undefined
  const flush = () => {
    if (timer) clearTimeout(timer)
    timer = undefined
    const lines = waiting
    waiting = ''
    try {
      out.write(lines)
    } catch {
      // Ended: nothing more can be written.
    }
  }
  process.once('exit', () => {
    if (!waiting) return
    flush()
    try {
      out.flushSync()
    } catch {
      // Not open yet, or ended: as pino's own flush at exit.
    }
  })
  return {
    write(line: string) {
      waiting += line
      // Warnings and errors go out at once (with the lines before them), as people wait on them.
      if (line.charCodeAt(LEVEL_AT) >= FOUR || waiting.length >= BATCH_CHARS) flush()
      else timer ??= setTimeout(flush, BATCH_MS)
    },
  }
}

/** The process's log. */
export const log: Logger = createLogger()
