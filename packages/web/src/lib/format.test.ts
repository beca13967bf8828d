import { describe, expect, it } from 'vitest'
import {
  estimateTokens,
  formatGigabytes,
  formatRelativeDate,
  formatReputation,
  formatTokensPerSecond,
  parseRecordDate,
  toTitleCase,
} from './format.ts'

const now = new Date('2026-05-10T12:00:00Z')
const hoursAgo = (h: number) => new Date(now.getTime() - h * 3_600_000)

describe('formatRelativeDate', () => {
  it('says Today within one day', () => {
    expect(formatRelativeDate(hoursAgo(0), now)).toBe('Today')
    expect(formatRelativeDate(hoursAgo(3), now)).toBe('Today')
    expect(formatRelativeDate(hoursAgo(24), now)).toBe('Today')
  })
  it('says Yesterday for the second day', () => {
    expect(formatRelativeDate(hoursAgo(25), now)).toBe('Yesterday')
    expect(formatRelativeDate(hoursAgo(48), now)).toBe('Yesterday')
  })
  it('says N days ago up to 7', () => {
    expect(formatRelativeDate(hoursAgo(49), now)).toBe('3 days ago')
    expect(formatRelativeDate(hoursAgo(24 * 7), now)).toBe('7 days ago')
  })
  it('falls back to a local date after 7 days', () => {
    const old = hoursAgo(24 * 7 + 1)
    expect(formatRelativeDate(old, now)).toBe(old.toLocaleDateString())
  })
  it('reads PocketBase record dates', () => {
    expect(formatRelativeDate('2026-05-10 09:00:00.000Z', now)).toBe('Today')
    expect(parseRecordDate('2026-05-10 09:00:00.123Z').toISOString()).toBe(
      '2026-05-10T09:00:00.123Z',
    )
  })
})

describe('toTitleCase', () => {
  it('capitalises each word and lowercases the rest', () => {
    expect(toTitleCase('hello wORLD of AI')).toBe('Hello World Of Ai')
    expect(toTitleCase('  two  spaces ')).toBe('  Two  Spaces ')
  })
})

describe('estimateTokens', () => {
  it('is floor(length / 4)', () => {
    expect(estimateTokens('')).toBe(0)
    expect(estimateTokens('abc')).toBe(0)
    expect(estimateTokens('abcd')).toBe(1)
    expect(estimateTokens('abcdefg')).toBe(1)
    expect(estimateTokens('x'.repeat(41))).toBe(10)
  })
})

describe('number formats', () => {
  it('formats GB as bytes / 1024^3 with one decimal', () => {
    expect(formatGigabytes(1024 ** 3)).toBe('1.0 GB')
    expect(formatGigabytes(4_368_439_296)).toBe('4.1 GB')
    expect(formatGigabytes(0)).toBe('0.0 GB')
    // Real small files never read 0.0 GB: the demo model is 1.1 MB.
    expect(formatGigabytes(1_185_376)).toBe('1.1 MB')
    expect(formatGigabytes(53_687_090)).toBe('51.2 MB')
    expect(formatGigabytes(53_687_092)).toBe('0.1 GB')
    expect(formatGigabytes(397_808_192)).toBe('0.4 GB')
  })
  it('formats tokens/s and reputation with one decimal', () => {
    expect(formatTokensPerSecond(12.345)).toBe('12.3 tok/s')
    expect(formatTokensPerSecond(NaN)).toBe('0.0 tok/s')
    expect(formatReputation(4.25)).toBe('4.3')
    expect(formatReputation(undefined)).toBe('0.0')
  })
})
