import { describe, expect, it } from 'vitest'
import {
  AUTO_SCROLL_THRESHOLD_PX,
  distanceFromBottom,
  isManualScrollKey,
  shouldFollow,
} from './auto-scroll.ts'

describe('auto-scroll rules', () => {
  it('measures the distance from the bottom', () => {
    expect(distanceFromBottom({ scrollHeight: 1000, scrollTop: 600, clientHeight: 400 })).toBe(0)
    expect(distanceFromBottom({ scrollHeight: 1000, scrollTop: 450, clientHeight: 400 })).toBe(150)
  })
  it('keeps following up to 100 px and stops beyond', () => {
    expect(AUTO_SCROLL_THRESHOLD_PX).toBe(100)
    expect(shouldFollow(0)).toBe(true)
    expect(shouldFollow(100)).toBe(true)
    expect(shouldFollow(101)).toBe(false)
  })
  it('treats arrow, page, home and end keys as manual scrolling', () => {
    for (const key of ['ArrowUp', 'ArrowDown', 'PageUp', 'PageDown', 'Home', 'End']) {
      expect(isManualScrollKey(key)).toBe(true)
    }
    expect(isManualScrollKey('a')).toBe(false)
    expect(isManualScrollKey('Enter')).toBe(false)
  })
})
