import { describe, expect, it } from 'vitest'
import type { MeterRule } from './answer-meter.ts'
import { countInput, PIECE_CHARS } from './input-count.ts'
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
  it("tokenizes a conversation's earlier turns once, however many sends count them", async () => {
    const tokenizer = wordTokenizer()
    const turn = (n: number) => `turn ${n} `.repeat(100).trim()
    const history = [turn(1), turn(2), turn(3), turn(4)]
    const first = await countInput([...history, 'a new question'], rule(tokenizer))
    const second = await countInput([...history, turn(5), 'another question'], rule(tokenizer))
    expect(first).toBe(4 * 200 + 3)
    expect(second).toBe(5 * 200 + 2)
    // Each long text once; the short new messages each time they come.
    for (const text of [...history, turn(5)])
      expect(tokenizer.calls.filter((t) => t === text)).toHaveLength(1)
    expect(tokenizer.calls).toHaveLength(7)
  })

  it('counts the same text alike for two tokenizers, each with its own', async () => {
    const a = wordTokenizer()
    const b = wordTokenizer()
    const text = 'word '.repeat(150).trim()
    expect(await countInput([text], rule(a))).toBe(150)
    expect(await countInput([text], rule(b))).toBe(150)
    expect(b.calls).toEqual([text])
  })
})

/** Half of a two-unit character without its other half. */
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

describe('countInput on a long text', () => {
  const words = (n: number) =>
    Array.from({ length: n }, (_, i) => ['alpha', 'be', 'gamma', 'delta,'][i % 4]).join(' ')

  it('counts it in pieces cut at spaces, as many tokens as the whole text has', async () => {
    const tokenizer = wordTokenizer()
    const text = words(5000)
    expect(await countInput([text], rule(tokenizer))).toBe(5000)
    const pieces = tokenizer.calls.filter((t) => !t.startsWith('The quick') && !t.startsWith(' '))
    expect(pieces.length).toBeGreaterThan(text.length / PIECE_CHARS)
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(PIECE_CHARS)
      expect(piece.startsWith(' ') || piece.endsWith(' ')).toBe(false)
    }
  })

  it('lets other work run between its pieces', async () => {
    let ranMeanwhile = false
    const counting = countInput([words(5000)], rule(wordTokenizer())).then((n) => ({
      n,
      ranMeanwhile,
    }))
    setImmediate(() => (ranMeanwhile = true))
    expect(await counting).toEqual({ n: 5000, ranMeanwhile: true })
  })

  it('never cuts a character in two where there is no space', async () => {
    const tokenizer = wordTokenizer()
    // Emoji are two UTF-16 units each; an odd start puts a naive cut between the halves.
    const text = `x${'😀'.repeat(3 * PIECE_CHARS)}`
    expect(await countInput([text], rule(tokenizer))).toBe(
      tokenizer.calls.filter((t) => !t.includes('quick') && !t.includes('lazy')).length,
    )
    const pieces = tokenizer.calls.filter((t) => t.includes('😀') || t === 'x')
    expect(pieces.join('')).toBe(text)
    for (const piece of pieces) {
      expect(piece.charCodeAt(0) >= 0xdc00 && piece.charCodeAt(0) <= 0xdfff).toBe(false)
      expect(loneSurrogate.test(piece)).toBe(false)
    }
  })
})
