import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { batchedLines } from './log.ts'

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
