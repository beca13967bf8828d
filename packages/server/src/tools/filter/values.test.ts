import { describe, expect, it } from 'vitest'
import { compareValues, commonKind, hasUnescapedPercent, likeMatch, likePattern } from './values.ts'

describe('like patterns', () => {
  it('wraps plain literals as "contains", escaping LIKE wildcards', () => {
    expect(likePattern('abc', true)).toBe('%abc%')
    expect(likePattern('a_b', true)).toBe('%a\\_b%')
    expect(likePattern('a\\b', true)).toBe('%a\\\\b%')
    expect(likePattern('a\\_b', true)).toBe('%a\\_b%')
  })

  it('uses a literal with an unescaped % as written', () => {
    expect(hasUnescapedPercent('abc%')).toBe(true)
    expect(hasUnescapedPercent('abc\\%')).toBe(false)
    expect(likePattern('abc%', true)).toBe('abc%')
    expect(likePattern('abc%\\', true)).toBe('abc%\\\\')
  })

  it('matches column values literally', () => {
    expect(likePattern('5%_x', false)).toBe('%5\\%\\_x%')
  })

  it('matches ASCII case-insensitively with _ as one character', () => {
    expect(likeMatch('Hello There', '%o t%')).toBe(true)
    expect(likeMatch('HELLO', 'h_llo')).toBe(true)
    expect(likeMatch('hllo', 'h_llo')).toBe(false)
    expect(likeMatch('a%b', '%a\\%b%')).toBe(true)
    expect(likeMatch('axb', '%a\\%b%')).toBe(false)
    expect(likeMatch('😀x', '_x')).toBe(true)
    expect(likeMatch('É', 'é')).toBe(false)
    expect(likeMatch('a.b(c', '%.b(%')).toBe(true)
  })
})

describe('comparisons', () => {
  it("treats '' and NULL as equal text", () => {
    expect(compareValues('text', '=', '', null, true)).toBe(true)
    expect(compareValues('text', '!=', 'a', null, true)).toBe(true)
    expect(compareValues('number', '=', 0, null, true)).toBe(false)
    expect(compareValues('number', '=', null, null, true)).toBe(true)
    expect(compareValues('text', '>', null, 'a', true)).toBe(false)
  })

  it('reads numeric text literals as numbers and renders other mixes as text', () => {
    const field = { kind: 'number' as const, isLiteral: false }
    expect(commonKind('=', field, { kind: 'text', literal: '5', isLiteral: true })).toBe('number')
    expect(commonKind('=', field, { kind: 'text', literal: 'abc', isLiteral: true })).toBe('text')
    expect(commonKind('=', field, { kind: 'text', isLiteral: false })).toBe('text')
    expect(commonKind('~', field, { kind: 'number', literal: 5, isLiteral: true })).toBe('text')
    expect(
      commonKind(
        '=',
        { kind: 'bool', isLiteral: false },
        { kind: 'number', literal: 1, isLiteral: true },
      ),
    ).toBe('number')
  })

  it('orders text by UTF-8 bytes', () => {
    expect(compareValues('text', '<', 'B', 'a', true)).toBe(true)
    expect(compareValues('text', '<', '\uffff', '😀', true)).toBe(true)
  })
})
