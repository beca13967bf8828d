/**
 * The record-read shortcut (src/apis/record-read-shortcut.ts) answers plain GET reads outside Hono:
 * every call here is asked of the same coordinator with the shortcut on and off, and the answers
 * must be the same bytes (status, every header in order, body), the same access line and the same
 * metrics; calls it does not take, and errors, are Hono's in both cases.
 */
import { request } from 'node:http'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { log } from '../src/tools/log.ts'
import { startTestServer, signUp, type TestServer } from './harness.ts'

interface RawAnswer {
  status: number
  headers: string[]
  body: string
}

/** A GET on a raw socket: the headers as sent (names, order, values). */
function get(server: TestServer, path: string, headers: Record<string, string> = {}) {
  return new Promise<RawAnswer>((resolve, reject) => {
    const req = request(`${server.url}${path}`, { headers }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.rawHeaders, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** The answer with what differs between any two requests (date, a generated id) blanked. */
function comparable(answer: RawAnswer, keepId: boolean): RawAnswer {
  const headers = answer.headers.map((value, i) => {
    const name = answer.headers[i - 1]?.toLowerCase()
    if (i % 2 === 1 && (name === 'date' || (name === 'x-request-id' && !keepId))) return '-'
    return value
  })
  return { ...answer, headers }
}

describe('record-read shortcut', () => {
  let server: TestServer
  let token: string
  let paths: Record<string, string>
  beforeAll(async () => {
    server = await startTestServer('sqlite', { metricsToken: 'metrics-secret' })
    const pb = await signUp(server)
    token = pb.authStore.token
    const user = pb.authStore.record!.id
    const mine = []
    for (let i = 0; i < 5; i++)
      mine.push(await pb.collection('conversations').create({ title: `Chat "${i}" é` }))
    const other = await (await signUp(server, 'other')).collection('conversations').create({})
    const filter = encodeURIComponent(`user = "${user}"`)
    const list = `/api/collections/conversations/records?page=2&perPage=2&sort=-last_message_at,-created&filter=${filter}`
    paths = {
      getOne: `/api/collections/conversations/records/${mine[0].id}`,
      list,
      skipTotal: `${list}&skipTotal=1`,
      rawQuote: `/api/collections/conversations/records?filter=title~"Chat"&perPage=3`,
      repeated: `${list}&page=1&sort=created`,
      noQuery: '/api/collections/models/records',
      othersRecord: `/api/collections/conversations/records/${other.id}`,
      unknownCollection: '/api/collections/nope/records',
      badFilter: '/api/collections/conversations/records?filter=nope%20%3D%3D',
      badPage: '/api/collections/conversations/records?page=x',
      badSkipTotal: '/api/collections/conversations/records?skipTotal=maybe',
      longParam: `/api/collections/conversations/records?sort=${'a'.repeat(3000)}`,
      longId: `/api/collections/conversations/records/${'a'.repeat(256)}`,
      longName: `/api/collections/${'a'.repeat(256)}/records`,
      nul: '/api/collections/conversations/records?filter=%00',
      fields: `${list}&fields=id,title`,
      expand: `/api/collections/conversations/records/${mine[0].id}?expand=model`,
      encodedPath: `/api/collections/conversations/records/${mine[0].id.slice(0, 3)}%61`,
      trailingSlash: '/api/collections/conversations/records/',
    }
  })
  afterAll(() => server.stop())

  /** The access lines the process log writes meanwhile, as written (at info, whatever level the
   * test config sets; not printed). */
  function accessLines() {
    const stream = (log as unknown as Record<symbol, { write(line: string): void }>)[
      pino.symbols.streamSym
    ]
    const level = log.level
    log.level = 'info'
    const write = vi.spyOn(stream, 'write').mockImplementation(() => undefined)
    return {
      last: () =>
        write.mock.calls
          .map(([written]) => JSON.parse(written) as Record<string, unknown>)
          .filter((written) => written.msg === 'request')
          .at(-1),
      restore() {
        write.mockRestore()
        log.level = level
      },
    }
  }

  async function bothWays(path: string, headers: Record<string, string>) {
    const lines = accessLines()
    try {
      server.recordReads.enabled = true
      const fast = await get(server, path, headers)
      const fastLine = lines.last()
      server.recordReads.enabled = false
      const hono = await get(server, path, headers)
      const honoLine = lines.last()
      return { fast, hono, fastLine, honoLine }
    } finally {
      server.recordReads.enabled = true
      lines.restore()
    }
  }

  const line = (written: Record<string, unknown> | undefined) => {
    const { reqId, ms, time, ...rest } = written!
    expect(typeof ms).toBe('number')
    expect(typeof time).toBe('number')
    return { ...rest, reqId: typeof reqId }
  }

  it('answers the same bytes, access line and request id as the Hono route', async () => {
    for (const [name, path] of Object.entries(paths)) {
      for (const auth of [{ Authorization: token }, {}] as Record<string, string>[]) {
        const { fast, hono, fastLine, honoLine } = await bothWays(path, auth)
        expect(comparable(fast, false), name).toEqual(comparable(hono, false))
        expect(line(fastLine), name).toEqual(line(honoLine))
        const id = fast.headers[fast.headers.findIndex((h) => h === 'x-request-id') + 1]
        expect(fastLine!.reqId, name).toBe(id)
      }
    }
    // The reads the shortcut takes really are answered (the errors above are Hono's either way).
    const { fast } = await bothWays(paths.getOne, { Authorization: token })
    expect(fast.status).toBe(200)
    expect(fast.body).toContain('Chat \\"0\\" é')
  })

  it('keeps a sane X-Request-Id of the caller and replaces one that is not', async () => {
    for (const given of ['edge-42', 'not sane!', 'a'.repeat(256)]) {
      const headers = { Authorization: token, 'X-Request-Id': given }
      const { fast, hono, fastLine } = await bothWays(paths.list, headers)
      expect(comparable(fast, given === 'edge-42')).toEqual(comparable(hono, given === 'edge-42'))
      const sent = fast.headers[fast.headers.findIndex((h) => h === 'x-request-id') + 1]
      expect(sent === given).toBe(given === 'edge-42')
      expect(fastLine!.reqId).toBe(sent)
    }
  })

  it('takes plain reads only, and counts them in the metrics like the Hono route', async () => {
    const take = vi.spyOn(server.recordReads, 'take')
    try {
      await get(server, paths.getOne, { Authorization: token })
      await get(server, paths.fields, { Authorization: token })
      await get(server, paths.expand, { Authorization: token })
      expect(take.mock.results.map((r) => r.value)).toEqual([true, false, false])
    } finally {
      take.mockRestore()
    }
    const counted = async () => {
      const metrics = await get(server, '/api/metrics', { Authorization: 'Bearer metrics-secret' })
      const line = metrics.body
        .split('\n')
        .find((l) =>
          l.startsWith(
            'meshwork_http_requests_total{method="GET",route="/api/collections/:collection/records/:id",status="200"}',
          ),
        )
      return Number(line?.split(' ').at(-1) ?? 0)
    }
    const before = await counted()
    await get(server, paths.getOne, { Authorization: token })
    await get(server, paths.getOne, { Authorization: token })
    expect(await counted()).toBe(before + 2)
  })
  // At once (listNow/viewNow throw, as SQLite's readNow can) or after waiting (list/view reject,
  // as PostgreSQL's pool does).
  it.each(['at once', 'after waiting'])(
    'a database that cannot answer (%s): the same 503 both ways, after one read',
    async (when) => {
      // What the pool throws when PostgreSQL does not answer (db/postgres-pool.ts).
      const silent = Object.assign(new Error('PostgreSQL did not answer within 7000 ms'), {
        code: 'ETIMEDOUT',
      })
      const records = server.core.records
      const list = vi.spyOn(records, 'list').mockRejectedValue(silent)
      const view = vi.spyOn(records, 'view').mockRejectedValue(silent)
      const listNow = vi.spyOn(records, 'listNow').mockImplementation(() => {
        if (when === 'at once') throw silent
        return undefined
      })
      const viewNow = vi.spyOn(records, 'viewNow').mockImplementation(() => {
        if (when === 'at once') throw silent
        return undefined
      })
      const failed = vi.spyOn(log, 'error')
      try {
        for (const path of [paths.list, paths.getOne]) {
          const { fast, hono, fastLine, honoLine } = await bothWays(path, { Authorization: token })
          expect(fast.status).toBe(503)
          expect(JSON.parse(fast.body)).toEqual({
            status: 503,
            message: 'The service is temporarily unavailable.',
            data: {},
          })
          expect(comparable(fast, false)).toEqual(comparable(hono, false))
          expect(line(fastLine)).toEqual(line(honoLine))
          const [fastError, honoError] = failed.mock.calls.slice(-2)
          expect(fastError).toEqual(honoError)
        }
        // Read once each way: the shortcut did not hand the request to Hono to wait again.
        const waited = when === 'at once' ? 1 : 2
        expect([list.mock.calls.length, view.mock.calls.length]).toEqual([waited, waited])
        expect([listNow.mock.calls.length, viewNow.mock.calls.length]).toEqual([1, 1])
      } finally {
        vi.restoreAllMocks()
      }
    },
  )
})
