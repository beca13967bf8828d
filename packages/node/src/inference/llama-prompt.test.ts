/**
 * plainPrompt drops the oldest turns until a job fits its window. A coordinator may send any
 * number of messages, and tokenizing blocks the agent (no heartbeat, no cancel), so the work must
 * not grow with one tokenization per message; and the turns kept must be exactly those older
 * agents keep, since a reference node replays the judged node's prompt token for token.
 */
import { describe, expect, it } from 'vitest'
import type { LlamaModel, Token } from 'node-llama-cpp'
import type { ChatMessage, Sampling } from '@meshwork/protocol'
import { plainPrompt } from './llama-prompt.ts'
import { plainTranscript } from './plain-transcript.ts'

/** One token per character; counts how many transcripts were tokenized. */
function charModel() {
  const counter = { calls: 0 }
  const model = {
    tokenize: (text: string) => {
      counter.calls++
      return Array.from(text, (c) => c.charCodeAt(0) as Token)
    },
  } as unknown as LlamaModel
  return { model, counter }
}

const sampling = (context_length: number, max_tokens = 10) =>
  ({ context_length, max_tokens }) as Sampling

/** The rule as agents before this change applied it, one drop and one tokenization at a time. */
function linearRule(model: LlamaModel, window: number, messages: ChatMessage[], room: number) {
  let kept = messages
  let tokens = model.tokenize(plainTranscript(kept))
  while (tokens.length + room > window && kept.length > 1) {
    const dropAt = kept[0].role === 'system' && kept.length > 2 ? 1 : 0
    kept = kept.filter((_, i) => i !== dropAt)
    tokens = model.tokenize(plainTranscript(kept))
  }
  return tokens
}

const turn = (role: ChatMessage['role'], i: number): ChatMessage => ({
  role,
  content: `message ${i} ${'x'.repeat(i % 7)}`,
})

describe('plainPrompt', () => {
  it('keeps the same turns as the one-drop-at-a-time rule', () => {
    const { model } = charModel()
    const shapes: ChatMessage[][] = [
      Array.from({ length: 30 }, (_, i) => turn(i % 2 ? 'assistant' : 'user', i)),
      [turn('system', 0), ...Array.from({ length: 25 }, (_, i) => turn('user', i + 1))],
      // System messages further in become the leading one as older turns go.
      Array.from({ length: 30 }, (_, i) => turn(i % 5 === 1 ? 'system' : 'user', i)),
      [turn('system', 0), turn('system', 1), turn('user', 2)],
      [turn('user', 0)],
    ]
    for (const messages of shapes) {
      for (const window of [8, 40, 100, 250, 2000]) {
        const room = Math.min(10, Math.floor(window / 2))
        let expected = linearRule(model, window, messages, room)
        if (expected.length + room > window)
          expected = expected.slice(expected.length - (window - room))
        expect(plainPrompt(model, 4096, messages, sampling(window)).tokens).toEqual(expected)
      }
    }
  })

  it('tokenizes a few transcripts for thousands of messages, not one per message', () => {
    const { model, counter } = charModel()
    const messages = Array.from({ length: 3000 }, (_, i) => turn('user', i))
    const { tokens } = plainPrompt(model, 4096, messages, sampling(200))
    expect(tokens.length).toBeLessThanOrEqual(190)
    expect(counter.calls).toBeLessThan(40)
  })
})
