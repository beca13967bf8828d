import { describe, expect, it } from 'vitest'
import { RateLimit } from './rate-limit.ts'

describe('RateLimit', () => {
  it('allows `limit` takes per key in a window, then refuses until the window ends', () => {
    let now = 0
    const limit = new RateLimit({ limit: 3, windowMs: 1000, now: () => now })
    expect([limit.take('a'), limit.take('a'), limit.take('a'), limit.take('a')]).toEqual([true, true, true, false])
    expect(limit.take('b')).toBe(true)
    now = 999
    expect(limit.take('a')).toBe(false)
    now = 1000
    expect(limit.take('a')).toBe(true)
  })

  it('keeps memory bounded under many addresses', () => {
    let now = 0
    const limit = new RateLimit({ limit: 1, windowMs: 10, now: () => now })
    for (let i = 0; i < 25_000; i++) {
      now = i
      expect(limit.take(`10.0.${i}`)).toBe(true)
    }
    expect((limit as unknown as { windows: Map<string, unknown> }).windows.size).toBeLessThanOrEqual(10_000)
  })
})
