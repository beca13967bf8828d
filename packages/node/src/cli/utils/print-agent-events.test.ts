/**
 * Text from the coordinator reaches the owner's terminal: model names, job ids, error messages.
 * A terminal obeys escape sequences (ESC ...) in what it prints: they could rewrite the lines
 * above, retitle the window or set the clipboard (OSC 52). They are printed as visible escapes.
 */
import { EventEmitter } from 'node:events'
import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import type { AgentEventMap, RunningAgent } from '../../agent/start-agent.ts'
import { createAgentLog } from './agent-log.ts'
import { printAgentEvents } from './print-agent-events.ts'

const CLIPBOARD = '\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07'
const CLEAR_LINE = '\r\x1b[2K\x1b[1A'

function printedLines(emit: (events: EventEmitter<AgentEventMap>) => void, json: boolean) {
  let text = ''
  const out = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString()
      done()
    },
  })
  const events = new EventEmitter<AgentEventMap>()
  const agent = { events, modelName: () => `stories${CLIPBOARD}` } as unknown as RunningAgent
  printAgentEvents(agent, 'http://127.0.0.1:8090', createAgentLog({ json, out }))
  emit(events)
  return text
}

describe('printing what the coordinator says', () => {
  for (const json of [false, true]) {
    it(`prints no control character from it${json ? ' (--json)' : ''}`, () => {
      const text = printedLines((events) => {
        events.emit('job', { kind: 'started', jobId: `j1${CLEAR_LINE}`, modelId: 'm' })
        events.emit('job', { kind: 'rejected', jobId: 'j2', reason: `no${CLIPBOARD}` })
        events.emit('model_status', {
          type: 'model_status',
          node_model_id: 'nm',
          is_downloaded: false,
          download_progress: 0,
          is_serving: false,
          tokens_per_second: 0,
          error_message: `Download failed: ${CLEAR_LINE}fine (HTTP 403)`,
        })
        events.emit('model_file_removed', 'nm', `bad\u202esob`)
      }, json)
      const lines = text.trim().split('\n')
      expect(lines).toHaveLength(4)
      // Raw in the text: no ESC, BEL, carriage return or bidi override; JSON escapes stay text.
      // eslint-disable-next-line no-control-regex -- control characters are what is looked for.
      expect(text).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/)
      expect(text).toContain('stories')
      expect(text).toContain('Download failed:')
    })
  }
})
