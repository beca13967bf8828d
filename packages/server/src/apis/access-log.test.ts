import { Writable } from 'node:stream'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../tools/log.ts'
import { bindAccessLog } from './access-log.ts'

function capture() {
  const lines: Record<string, unknown>[] = []
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  return { lines, destination }
}

describe('structured logs', () => {
  it('give every request an id, put it on every line logged while handling it, and log one access line with the route pattern', async () => {
    const { lines, destination } = capture()
    const log = createLogger({ level: 'info', format: 'json', destination })
    const app = new Hono()
    bindAccessLog(app, log)
    app.get('/api/collections/:c/records/:id', (c) => {
      log.warn({ collection: c.req.param('c') }, 'inside the handler')
      return c.json({ ok: true })
    })

    const res = await app.request('/api/collections/requests/records/abc123def456ghi')
    expect(res.status).toBe(200)
    const id = res.headers.get('X-Request-Id')
    expect(id).toMatch(/^[0-9a-f-]{36}$/)

    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatchObject({
      level: 40,
      msg: 'inside the handler',
      reqId: id,
      collection: 'requests',
    })
    expect(lines[1]).toMatchObject({
      level: 30,
      msg: 'request',
      reqId: id,
      method: 'GET',
      route: '/api/collections/:c/records/:id',
      status: 200,
    })
    expect(typeof lines[1].ms).toBe('number')
    // The URL's ids stay out of the access line.
    expect(JSON.stringify(lines[1])).not.toContain('abc123def456ghi')

    // A sane id from the caller (a proxy's) is kept; another request gets its own.
    const traced = await app.request('/api/collections/x/records/y', {
      headers: { 'X-Request-Id': 'edge-42' },
    })
    expect(traced.headers.get('X-Request-Id')).toBe('edge-42')
    expect(lines.at(-1)).toMatchObject({ reqId: 'edge-42', status: 200 })
    const other = await app.request('/nowhere')
    expect(other.status).toBe(404)
    expect(lines.at(-1)).toMatchObject({ status: 404, msg: 'request' })
    expect(lines.at(-1)?.reqId).not.toBe(id)
  })

  it('follow MESHWORK_LOG_LEVEL and print nothing outside a request with a request id', () => {
    const { lines, destination } = capture()
    const before = process.env.MESHWORK_LOG_LEVEL
    process.env.MESHWORK_LOG_LEVEL = 'error'
    try {
      const log = createLogger({ format: 'json', destination })
      log.info('quiet')
      log.warn('quiet too')
      log.error({ err: new Error('boom') }, 'loud')
    } finally {
      if (before === undefined) delete process.env.MESHWORK_LOG_LEVEL
      else process.env.MESHWORK_LOG_LEVEL = before
    }
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: 50, msg: 'loud', err: { message: 'boom' } })
    expect(lines[0]).not.toHaveProperty('reqId')
  })
})
