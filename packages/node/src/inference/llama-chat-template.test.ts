/**
 * A model whose GGUF carries a chat template (tokenizer.chat_template, as the Qwen and Llama 3.2
 * Instruct files do) is prompted through that template on the node, not through the plain
 * transcript. The shared test models have no template, so the test writes a copy of
 * llama-2-tiny-random with one added: a made-up template that no built-in wrapper knows, so
 * what renders it can only be the file's own template.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { Sampling } from '@meshwork/protocol'
import { createLlamaEngine } from './llama-engine.ts'
import { chatTemplateText, modelChatWrapper } from './llama-prompt.ts'

const MODELS = new URL('../../../../../shared/models/', import.meta.url).pathname

const TEMPLATE =
  "{% for message in messages %}<<{{ message['role'] }}>>{{ message['content'] }}<</{{ message['role'] }}>>\n" +
  '{% endfor %}{% if add_generation_prompt %}<<assistant>>{% endif %}'

/** A copy of a GGUF file with one more string key-value pair (GGUF v2/v3 layout). */
function withStringKey(source: Buffer, key: string, value: string): Buffer {
  let at = 8 // magic, version
  const u32 = () => ((at += 4), source.readUInt32LE(at - 4))
  const u64 = () => ((at += 8), Number(source.readBigUInt64LE(at - 8)))
  const str = () => {
    const n = u64()
    at += n
    return source.toString('utf8', at - n, at)
  }
  const fixed: Record<number, number> = {
    0: 1,
    1: 1,
    2: 2,
    3: 2,
    4: 4,
    5: 4,
    6: 4,
    7: 1,
    10: 8,
    11: 8,
    12: 8,
  }
  let alignment = 32
  const skipValue = (type: number): void => {
    if (type === 8) str()
    else if (type === 9) {
      const itemType = u32()
      const count = u64()
      for (let i = 0; i < count; i++) skipValue(itemType)
    } else at += fixed[type]
  }
  const tensorCount = u64()
  const kvCount = u64()
  const kvStart = at
  for (let i = 0; i < kvCount; i++) {
    const k = str()
    const type = u32()
    if (k === 'general.alignment') alignment = source.readUInt32LE(at)
    skipValue(type)
  }
  const kvEnd = at
  for (let i = 0; i < tensorCount; i++) {
    str()
    const dims = u32()
    at += dims * 8 + 4 + 8 // dims, type, offset
  }
  const infosEnd = at
  const dataStart = Math.ceil(infosEnd / alignment) * alignment

  const gstr = (s: string) => {
    const bytes = Buffer.from(s, 'utf8')
    const len = Buffer.alloc(8)
    len.writeBigUInt64LE(BigInt(bytes.length))
    return Buffer.concat([len, bytes])
  }
  const type = Buffer.alloc(4)
  type.writeUInt32LE(8)
  const header = Buffer.from(source.subarray(0, kvStart))
  header.writeBigUInt64LE(BigInt(kvCount + 1), 16)
  const head = Buffer.concat([
    header,
    source.subarray(kvStart, kvEnd),
    gstr(key),
    type,
    gstr(value),
    source.subarray(kvEnd, infosEnd),
  ])
  // Tensor offsets count from the data section, which starts at the next aligned position.
  const pad = Buffer.alloc(Math.ceil(head.length / alignment) * alignment - head.length)
  return Buffer.concat([head, pad, source.subarray(dataStart)])
}

const sampling: Sampling = {
  temperature: 0.7,
  top_p: 0.9,
  top_k: 40,
  repeat_penalty: 1.1,
  frequency_penalty: 0,
  presence_penalty: 0,
  max_tokens: 6,
  context_length: 8000,
}

describe('a model with its own chat template', () => {
  const dir = mkdtempSync(join(tmpdir(), 'meshwork-template-'))
  const path = join(dir, 'templated.gguf')
  writeFileSync(
    path,
    withStringKey(
      readFileSync(`${MODELS}llama-2-tiny-random.gguf`),
      'tokenizer.chat_template',
      TEMPLATE,
    ),
  )
  const engine = createLlamaEngine({ gpu: false, threads: 1 })
  afterAll(async () => {
    await engine.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  it('is rendered with that template, and the engine picks it by itself', async () => {
    const { getLlama } = await import('node-llama-cpp')
    const llama = await getLlama({ build: 'never', gpu: false })
    const model = await llama.loadModel({ modelPath: path })
    try {
      expect(model.fileInfo.metadata.tokenizer?.chat_template).toBe(TEMPLATE)
      const text = chatTemplateText(await modelChatWrapper(model), [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi there' },
        { role: 'assistant', content: 'Hello!' },
        { role: 'user', content: 'Tell me a story' },
      ])
      expect(text).toContain('<<system>>Be brief.<</system>>\n')
      expect(text).toContain('<<user>>Hi there<</user>>\n<<assistant>>Hello!<</assistant>>\n')
      expect(text.trimEnd()).toMatch(/<<user>>Tell me a story<<\/user>>\n<<assistant>>$/)
      // Not the plain transcript the engine uses for models without a template.
      expect(text).not.toContain('User: Hi there')
    } finally {
      await model.dispose()
    }

    const loaded = await engine.load({ id: 't1', name: 'templated', path })
    expect(loaded.settings.promptFormat).toBe('chat-template')
    const res = await loaded.generate(
      { messages: [{ role: 'user', content: 'Hi' }], sampling },
      { onText: () => {} },
    )
    expect(res.tokensOutput).toBeGreaterThan(0)
    await loaded.unload()
  })
})
