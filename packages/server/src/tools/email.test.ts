import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isEmail, MAX_EMAIL_LENGTH } from './email.ts'

/** The pattern isEmail replaced (quadratic on `a@a.a.a…@`): the reference for what is an e-mail. */
const oldPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

describe('isEmail', () => {
  it('accepts what the old pattern accepted, up to the length limit', () => {
    const text = fc.array(
      fc.constantFrom('a', 'B', '.', '@', ' ', '\t', '\u00a0', '\u2028', '😀', '-'),
      { maxLength: 16 },
    )
    fc.assert(
      fc.property(text, (chars) => {
        const candidate = chars.join('')
        return isEmail(candidate) === oldPattern.test(candidate)
      }),
      { numRuns: 20_000 },
    )
    for (const ok of ['a@b.co', 'first.last@sub.example.com', 'x@y.z'])
      expect(isEmail(ok), ok).toBe(true)
    for (const bad of ['', 'a', 'a@b', '@b.c', 'a@.c', 'a@b.', 'a b@c.d', 'a@b@c.d', 'a@b.c '])
      expect(isEmail(bad), bad).toBe(false)
  })

  it('refuses addresses longer than the limit, whatever their shape', () => {
    const local = 'a'.repeat(MAX_EMAIL_LENGTH - '@b.co'.length)
    expect(isEmail(`${local}@b.co`)).toBe(true)
    expect(isEmail(`${local}a@b.co`)).toBe(false)
  })

  it('answers the quadratic case of the old pattern in one pass', () => {
    // 1 MB of `a.` after an `@`, then a second `@`: the old pattern backtracked over every dot.
    const hostile = `a@${'a.'.repeat(500_000)}@`
    expect(isEmail(hostile)).toBe(false)
    expect(isEmail(hostile.slice(0, MAX_EMAIL_LENGTH))).toBe(true)
  })
})
