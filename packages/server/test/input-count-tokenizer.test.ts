/**
 * Long prompts counted in pieces (core/metering/input-count.ts) with llama.cpp's own tokenizers,
 * the two test models': a text with spaces counts exactly what it counts whole, and one without
 * (CJK) at most one token more per piece. No call tokenizes more than a piece, so a prompt at the
 * send's length limit holds the event loop for a piece at a time (src/.../input-count.test.ts
 * shows other work running between pieces).
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getLlama, LlamaLogLevel } from 'node-llama-cpp'
import { modelMirror as mirror } from '@meshwork/test-kit'
import { countInput, PIECE_CHARS } from '../src/core/metering/input-count.ts'
import type { ModelTokenizer } from '../src/core/metering/model-tokenizer.ts'

type Llama = Awaited<ReturnType<typeof getLlama>>

const MAX_PROMPT = 32_000
const english = Array.from(
  { length: 6000 },
  (_, i) =>
    ['Once', 'upon', 'a', 'time,', 'there', 'was', 'a', 'little', 'dog.', 'Max', 'ran!'][i % 11],
).join(' ')
const cjk = Array.from({ length: MAX_PROMPT }, (_, i) =>
  String.fromCharCode(0x4e00 + ((i * 7919) % 20000)),
).join('')

describe.each(['stories260K.gguf', 'llama-2-tiny-random.gguf'])('counting %s prompts', (file) => {
  let llama: Llama
  let tokenizer: ModelTokenizer
  let calls: number[]

  beforeAll(async () => {
    llama = await getLlama({
      build: 'never',
      gpu: false,
      logLevel: LlamaLogLevel.error,
      logger: () => {},
    })
    const vocab = await llama.loadModel({ modelPath: join(mirror, file), vocabOnly: true })
    calls = []
    tokenizer = {
      tokenize: (text) => {
        calls.push(text.length)
        return vocab.tokenize(text)
      },
      detokenize: () => '',
      vocabularySize: 0,
      maxTokenBytes: 0,
    }
  })
  afterAll(() => llama?.dispose())

  const rule = () => ({ tokenizer, bytes: { maxBytesPerToken: 16, minBytesPerToken: 1 } })

  it('counts a long text with spaces exactly as the whole text', async () => {
    const whole = tokenizer.tokenize(english).length
    calls.length = 0
    expect(await countInput([english], rule())).toBe(whole)
    expect(Math.max(...calls)).toBeLessThanOrEqual(PIECE_CHARS)
  })

  it('counts a prompt of CJK at the length limit in pieces, within a token a piece', async () => {
    const whole = tokenizer.tokenize(cjk).length
    calls.length = 0
    const counted = await countInput([cjk], rule())
    expect(Math.max(...calls)).toBeLessThanOrEqual(PIECE_CHARS)
    expect(counted).toBeGreaterThanOrEqual(whole)
    expect(counted - whole).toBeLessThanOrEqual(MAX_PROMPT / PIECE_CHARS)
  })
})
