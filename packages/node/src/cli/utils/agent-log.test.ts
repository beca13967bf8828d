import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createAgentLog } from './agent-log.ts'

function capture() {
  let text = ''
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString()
      done()
    },
  })
  return { out, text: () => text }
}

describe('the agent log', () => {
  it('writes one JSON object a line with --json', () => {
    const { out, text } = capture()
    const log = createAgentLog({ json: true, out })
    log.info('connected to http://127.0.0.1:8090 (4 cores)')
    log.warn('job j1 failed: boom')
    const lines = text()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines).toMatchObject([
      { level: 30, msg: 'connected to http://127.0.0.1:8090 (4 cores)' },
      { level: 40, msg: 'job j1 failed: boom' },
    ])
    expect(typeof lines[0].time).toBe('number')
  })

  it('writes readable lines otherwise: time, level, message', () => {
    const { out, text } = capture()
    const log = createAgentLog({ json: false, out })
    log.info('stories260K: serving at 120.0 tokens/s')
    const line = text().trim()
    expect(line).toMatch(
      /^\[\d{4}-\d\d-\d\dT[\d:.]+.*\] INFO: stories260K: serving at 120\.0 tokens\/s$/,
    )
    expect(line).not.toContain('{')
  })
})
