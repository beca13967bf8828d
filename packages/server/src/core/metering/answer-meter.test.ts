import { describe, expect, it } from 'vitest'
import { countInput, type MeterRule } from './answer-meter.ts'
import type { ModelTokenizer } from './model-tokenizer.ts'

/** One token per word; records every text it was asked to tokenize. */
function wordTokenizer(): ModelTokenizer & { calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    tokenize: (text) => {
      calls.push(text)
      return text.split(' ').map((_, i) => i)
    },
    detokenize: () => '',
    vocabularySize: 1000,
    maxTokenBytes: 16,
  }
}

const rule = (tokenizer: ModelTokenizer): MeterRule => ({
  tokenizer,
  bytes: { maxBytesPerToken: 16, minBytesPerToken: 1 },
})

describe('countInput with the model tokenizer', () => {
  it("tokenizes a conversation's earlier turns once, however many sends count them", () => {
    const tokenizer = wordTokenizer()
    const turn = (n: number) => `turn ${n} `.repeat(100).trim()
    const history = [turn(1), turn(2), turn(3), turn(4)]
    const first = countInput([...history, 'a new question'], rule(tokenizer))
    const second = countInput([...history, turn(5), 'another question'], rule(tokenizer))
    expect(first).toBe(4 * 200 + 3)
    expect(second).toBe(5 * 200 + 2)
    // Each long text once; the short new messages each time they come.
    for (const text of [...history, turn(5)])
      expect(tokenizer.calls.filter((t) => t === text)).toHaveLength(1)
    expect(tokenizer.calls).toHaveLength(7)
  })

  it('counts the same text alike for two tokenizers, each with its own', () => {
    const a = wordTokenizer()
    const b = wordTokenizer()
    const text = 'word '.repeat(300).trim()
    expect(countInput([text], rule(a))).toBe(300)
    expect(countInput([text], rule(b))).toBe(300)
    expect(b.calls).toEqual([text])
  })
})
