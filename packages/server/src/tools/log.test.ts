import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { batchedLines, createLogger, requestLine, withRequestId } from './log.ts'

describe('batched log lines', () => {
  const dir = mkdtempSync(join(tmpdir(), 'meshwork-log-'))
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('write info lines within 100 ms, warnings at once with the lines before them', async () => {
    const file = join(dir, 'out.log')
    writeFileSync(file, '')
    const log = pino({ level: 'info', base: null }, batchedLines(file))
    const read = () => readFileSync(file, 'utf8')
    await new Promise((r) => setTimeout(r, 50)) // sonic-boom opens the file
    log.info('first')
    log.info('second')
    expect(read()).toBe('')
    await new Promise((r) => setTimeout(r, 250))
    expect(read().split('\n').filter(Boolean)).toHaveLength(2)

    log.info('third')
    log.warn('careful')
    await new Promise((r) => setTimeout(r, 20)) // the write itself is asynchronous
    const lines = read().split('\n').filter(Boolean)
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual([
      'first',
      'second',
      'third',
      'careful',
    ])
  })
})

describe('the access line', () => {
  const capture = () => {
    const lines: string[] = []
    return { lines, destination: { write: (line: string) => void lines.push(line) } }
  }
  const sameTime = (line: string) => line.replace(/"time":\d+/, '"time":0')

  it('is the line pino writes for the same fields, in a request scope or not', () => {
    const { lines, destination } = capture()
    const log = createLogger({ format: 'json', level: 'info', destination })
    const cases: Array<[string, string, string, number, number]> = [
      [
        '3f0c1c9e-61c8-4d6b-9a8c-6a8e7e0f2a11',
        'GET',
        '/api/collections/:collection/records/:id',
        200,
        0.3,
      ],
      ['proxy-given_id=', 'POST', '/api/chat/send', 503, 12],
      ['x', 'GET', '/odd "route" \\ é', 404, 1e21], // not plain: pino writes it
      ['x', 'GET', '/a', 200, Number.NaN],
    ]
    for (const [reqId, method, route, status, ms] of cases) {
      for (const scope of [undefined, reqId, 'another']) {
        const run = (fn: () => void) => (scope ? withRequestId(scope, fn) : fn())
        run(() => requestLine(log, reqId, method, route, status, ms))
        run(() => log.info({ reqId, method, route, status, ms }, 'request'))
        const [ours, pinos] = lines.splice(0).map(sameTime)
        expect(ours).toBe(pinos)
      }
    }
  })

  it('is not written below the logger level; a child logger goes through pino', () => {
    const { lines, destination } = capture()
    const quiet = createLogger({ format: 'json', level: 'warn', destination })
    requestLine(quiet, 'a', 'GET', '/a', 200, 1)
    expect(lines).toEqual([])
    const child = createLogger({ format: 'json', level: 'info', destination }).child({ part: 'x' })
    requestLine(child, 'a', 'GET', '/a', 200, 1)
    expect(JSON.parse(lines[0])).toMatchObject({ part: 'x', reqId: 'a', msg: 'request' })
  })
})
