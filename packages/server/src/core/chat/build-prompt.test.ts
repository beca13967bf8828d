import { describe, expect, it } from 'vitest'
import { estimateTokens } from '@meshwork/protocol'
import { buildPrompt } from './build-prompt.ts'

describe('buildPrompt', () => {
  it('estimates one token per 4 characters, rounded down', () => {
    expect(estimateTokens('abcdefg')).toBe(1)
    expect(estimateTokens('abcdefgh')).toBe(2)
  })

  it('puts earlier turns before the new message', async () => {
    const built = await buildPrompt(
      [{ prompt: 'Hi', response: 'Hello!' }],
      'How are you?',
      8000,
      256,
    )
    expect(built.messages).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
      { role: 'user', content: 'How are you?' },
    ])
    expect(built.estimatedInput).toBe(Math.floor('HiHello!How are you?'.length / 4))
  })

  it('drops the oldest turns first to fit the context', async () => {
    const turn = (n: number) => ({
      prompt: `q${n}`.padEnd(40, '.'),
      response: `a${n}`.padEnd(40, '.'),
    })
    // Budget: 100 - 60 = 40 tokens = 160 characters: the message (8) and one turn (80) fit, two do not.
    const built = await buildPrompt([turn(1), turn(2), turn(3)], 'new one!', 100, 60)
    expect(built.messages.map((m) => m.content.slice(0, 2))).toEqual(['q3', 'a3', 'ne'])
    expect(built.estimatedInput).toBe(Math.floor(88 / 4))
  })

  it('always keeps the new message', async () => {
    const built = await buildPrompt([], 'x'.repeat(1000), 100, 90)
    expect(built.messages).toHaveLength(1)
  })
})
