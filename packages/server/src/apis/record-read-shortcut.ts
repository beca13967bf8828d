/**
 * @module The record-read shortcut: plain GET reads of records (a list, one record), the API's
 * commonest calls, answered straight on node:http. Through Hono each one paid a fixed ~100 µs
 * (Request and Response objects, the middleware chain, header conversions) beside a read that a
 * bare server answers in ~45 µs (docs/performance.md, "Records against the stack's ceiling").
 *
 * It does what the Hono route does (record-crud.ts), through the same functions (or their
 * at-once twins, `callerNow`, `listNow` and `viewNow`, which answer without a promise where the
 * token is cached and SQLite can read outside a transaction: most reads), and answers the same
 * bytes: headers in the same order, the same JSON, the same access line, request id and
 * metrics (test/record-read-shortcut.test.ts compares the two paths). It takes only what it can
 * answer exactly: GET, a path and host Hono would read as they are, no `fields` or `expand`, a URL
 * within the limits; and it answers only successes, and a database that cannot answer (the 503
 * Hono's error handler gives). Any other error (unknown collection, a rule refusing, a malformed
 * filter) hands the request to Hono, which reads again and answers in its own shape: a read
 * changes nothing, so the second attempt costs only time, on error answers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { getQueryParam } from 'hono/utils/url'
import type { CoreApp } from '../core/app.ts'
import { requireCollection } from '../core/collections/registry.ts'
import { background } from '../tools/background.ts'
import { log, withRequestId } from '../tools/log.ts'
import { urlHasNul } from '../tools/nul.ts'
import { logRequest, requestIdFor } from './access-log.ts'
import { unavailableError } from './errors.ts'
import { checkQuery, MAX_SHORT_TEXT } from './input-limits.ts'
import { COMMON_HEADERS } from './security-headers.ts'
import type { Metrics } from './metrics.ts'
import { checkResponseSize, listOptions, RECORD_ROUTE, RECORDS_ROUTE } from './record-crud.ts'

export interface RecordReadShortcut {
  /** Whether it takes requests; tests turn it off to get the Hono path's answer. */
  enabled: boolean
  /** Answers the request (true) when it is a plain record read, else leaves it (false). */
  take(req: IncomingMessage, res: ServerResponse): boolean
}

// @hono/node-server uses a request's host and target as they are when they match these (its own
// rules), and otherwise normalises them with `new URL`, which this does the same way.
const plainHost = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/
const plainTarget = /^\/[!#$&-;=?-[\]_a-z~]*$/
const dotSegment = /\/\.\.?(?:[/?#]|$)/
/** A list or one record, with names and ids that Hono would not decode. */
const recordPath = /^\/api\/collections\/(\w+)\/records(?:\/(\w+))?$/

export function createRecordReadShortcut(
  core: CoreApp,
  /** Where every request it does not answer goes: the Hono app's listener. */
  hono: (req: IncomingMessage, res: ServerResponse) => void,
  metrics?: Metrics,
): RecordReadShortcut {
  /** The answer's body at once, without a promise (a guest or a token verified a moment ago, and
   * a database that reads without waiting), or undefined where `read` has to wait for it. */
  const readNow = (
    req: IncomingMessage,
    name: string,
    id: string | undefined,
    query: Record<string, string>,
  ): string | undefined => {
    const collection = requireCollection(name)
    const caller = core.auth.callerNow(header(req, 'authorization'))
    if (!caller) return undefined
    const data =
      id === undefined
        ? core.records.listNow(caller, collection, listOptions(query))
        : core.records.viewNow(caller, collection, id)
    if (!data) return undefined
    checkResponseSize(data)
    return JSON.stringify(data)
  }

  const read = async (
    req: IncomingMessage,
    name: string,
    id: string | undefined,
    query: Record<string, string>,
  ): Promise<string> => {
    const collection = requireCollection(name)
    const caller = await core.auth.callerFromHeader(header(req, 'authorization'))
    const data =
      id === undefined
        ? await core.records.list(caller, collection, listOptions(query), undefined)
        : await core.records.view(caller, collection, id, undefined)
    checkResponseSize(data)
    return JSON.stringify(data)
  }

  /** Answers the request: at once where it can (most reads), else once `read` has. */
  const answer = (
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    [name, id]: [string, string | undefined],
    query: Record<string, string>,
  ) => {
    const start = performance.now()
    const reqId = requestIdFor(header(req, 'x-request-id'))
    let body: string | undefined
    try {
      body = withRequestId(reqId, () => readNow(req, name, id, query))
    } catch (err) {
      return failed(req, res, path, id, reqId, start, err as Error)
    }
    if (body !== undefined) return send(res, id, reqId, start, 200, body)
    background(
      withRequestId(reqId, () => read(req, name, id, query)).then(
        (later) => send(res, id, reqId, start, 200, later),
        (err: Error) => failed(req, res, path, id, reqId, start, err),
      ),
      'HTTP request',
    )
  }

  /** An error answered here, or the request handed to Hono (module comment). */
  const failed = (
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    id: string | undefined,
    reqId: string,
    start: number,
    err: Error,
  ) => {
    // A database that cannot answer is answered here, as the Hono route would: reading again
    // there waited as long again for a database that does not answer (twice the bound, twice
    // the pool's connections held meanwhile).
    const unavailable = withRequestId(reqId, () => unavailableError(err, 'GET', path))
    if (!unavailable) return hono(req, res)
    send(res, id, reqId, start, unavailable.status, JSON.stringify(unavailable.toJSON()))
  }

  const send = (
    res: ServerResponse,
    id: string | undefined,
    reqId: string,
    start: number,
    status: number,
    body: string,
  ) => {
    // The order of the Hono path: the common headers server.ts sets there, Hono's Headers
    // (sorted, lower case), then the length node-server adds.
    res.writeHead(status, [
      ...COMMON_HEADERS,
      'content-type',
      'application/json',
      'x-request-id',
      reqId,
      'Content-Length',
      String(Buffer.byteLength(body)),
    ])
    res.end(body)
    const route = id === undefined ? RECORDS_ROUTE : RECORD_ROUTE
    logRequest(log, reqId, 'GET', route, status, start)
    metrics?.observe('GET', route, status, start)
  }

  return {
    enabled: true,
    take(req, res) {
      if (!this.enabled || req.method !== 'GET') return false
      const target = req.url ?? ''
      if (!target.startsWith('/api/collections/')) return false
      // The URL from its path on (the host is plain: nothing below looks for anything in it).
      const url = honoTarget(req.headers.host, target)
      if (!url) return false
      const queryStart = url.indexOf('?')
      const path = queryStart === -1 ? url : url.slice(0, queryStart)
      const match = recordPath.exec(path)
      if (!match || urlHasNul(url)) return false
      // checkUrl's limits: the name and the id are the path's only segments of any length.
      if (match[1].length > MAX_SHORT_TEXT || (match[2]?.length ?? 0) > MAX_SHORT_TEXT) return false
      try {
        checkQuery(url)
      } catch {
        return false
      }
      const query = (getQueryParam(url) ?? {}) as Record<string, string>
      if ('fields' in query || 'expand' in query) return false
      answer(req, res, path, [match[1], match[2]], query)
      return true
    },
  }
}

/** The request's URL as @hono/node-server builds it (plain HTTP) from its path on, or null where
 * it would fail. */
function honoTarget(host: string | undefined, target: string): string | null {
  if (!host || !plainHost.test(host)) return null
  if (plainTarget.test(target) && !dotSegment.test(target)) return target
  const backslash = target.indexOf('\\')
  if (backslash !== -1 && (target.indexOf('?') === -1 || backslash < target.indexOf('?')))
    return null
  try {
    const { href } = new URL(`http://${host}${target}`)
    return href.slice(href.indexOf('/', href.indexOf(':') + 3))
  } catch {
    return null
  }
}

/** A request header as Hono's Headers gives it: repeated ones joined with ", ". */
function header(req: IncomingMessage, lowerName: string): string | undefined {
  const raw = req.rawHeaders
  let value: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === lowerName.length && raw[i].toLowerCase() === lowerName)
      value = value === undefined ? raw[i + 1] : `${value}, ${raw[i + 1]}`
  }
  return value
}
