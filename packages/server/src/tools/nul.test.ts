import { describe, expect, it } from 'vitest'
import { parseJsonDroppingNul } from './nul.ts'

describe('parseJsonDroppingNul', () => {
  it('drops U+0000 from string values, at any depth', () => {
    const text = JSON.stringify({
      type: 'job_chunk',
      text: 'a\u0000b',
      more: ['\u0000c', { d: 'e\u0000' }],
    })
    expect(text).toContain('\\u0000')
    expect(parseJsonDroppingNul(text)).toEqual({
      type: 'job_chunk',
      text: 'ab',
      more: ['c', { d: 'e' }],
    })
  })

  it('leaves text without U+0000 as JSON.parse reads it, an escaped backslash before "u0000" included', () => {
    const text = JSON.stringify({ text: 'C:\\u0000 is a path', n: 1, ok: true, none: null })
    expect(parseJsonDroppingNul(text)).toEqual(JSON.parse(text))
    expect((parseJsonDroppingNul(text) as { text: string }).text).toBe('C:\\u0000 is a path')
  })

  it('throws on text that is not JSON, as JSON.parse does', () => {
    expect(() => parseJsonDroppingNul('{"text": "a\u0000b"}')).toThrow(SyntaxError)
    expect(() => parseJsonDroppingNul('{')).toThrow(SyntaxError)
  })
})
