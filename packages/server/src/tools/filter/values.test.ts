import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { FilterError } from './filter-error.ts'
import {
  compareValues,
  commonKind,
  hasUnescapedPercent,
  isNumericText,
  likeMatch,
  likePattern,
} from './values.ts'

/** The regular-expression LIKE that likeMatch replaced (exponential on many `%`): the reference. */
function regexLike(value: string, pattern: string): boolean {
  const lower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase())
  const escape = (ch: string) => (/[\\^$.*+?()[\]{}|/]/.test(ch) ? `\\${ch}` : ch)
  let regex = ''
  const chars = Array.from(lower(pattern))
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]
    if (ch === '\\' && i + 1 < chars.length) regex += escape(chars[++i])
    else if (ch === '%') regex += '.*'
    else if (ch === '_') regex += '.'
    else regex += escape(ch)
  }
  return new RegExp(`^${regex}$`, 'su').test(lower(value))
}

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

  it('answers as the regular expression did, for any value and pattern', () => {
    const text = (chars: string[]) =>
      fc.array(fc.constantFrom(...chars), { maxLength: 12 }).map((a) => a.join(''))
    const alphabet = ['a', 'b', 'A', '.', '\n', '😀', '\\', '%', '_']
    fc.assert(
      fc.property(text(alphabet), text(alphabet), (value, pattern) => {
        expect(likeMatch(value, pattern)).toBe(regexLike(value, pattern))
      }),
      { numRuns: 5000 },
    )
  })

  it('decides patterns with many wildcards without backtracking, and gives up on costly ones', () => {
    const long = 'a'.repeat(32_000)
    // Exponential for the regular expression; one pass here.
    expect(likeMatch(long, `%${'a%'.repeat(100)}b`)).toBe(false)
    expect(likeMatch(`${long}b`, `%${'a%'.repeat(100)}b`)).toBe(true)
    // 32,000 places x 200 comparisons each is over the budget: an error, not a held event loop.
    expect(() => likeMatch(long, `%${'a_'.repeat(100)}b%`)).toThrow(FilterError)
  })
})

describe('numeric text', () => {
  it('is recognised as before', () => {
    for (const yes of ['5', ' -5 ', '1.', '.5', '1.5e3', '2E-2', '007'])
      expect(isNumericText(yes), yes).toBe(true)
    for (const no of ['', '-', '.', '1..2', '1e', 'e5', '1.5.5', '0x10', '1 2'])
      expect(isNumericText(no), no).toBe(false)
  })

  it('answers as the old pattern did, for any text', () => {
    const old = /^\s*-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/
    const text = fc
      .array(fc.constantFrom('1', '0', '.', '-', '+', 'e', 'E', ' ', 'x'), { maxLength: 10 })
      .map((a) => a.join(''))
    fc.assert(
      fc.property(text, (t) => isNumericText(t) === old.test(t)),
      { numRuns: 5000 },
    )
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
