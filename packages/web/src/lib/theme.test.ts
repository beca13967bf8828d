import { afterEach, describe, expect, it } from 'vitest'
import { applyTheme, readTheme, THEME_STORAGE_KEY } from './theme.ts'

describe('theme', () => {
  afterEach(() => {
    localStorage.clear()
    document.documentElement.classList.remove('dark')
  })

  it('defaults to light', () => {
    expect(readTheme()).toBe('light')
  })
  it('applies dark as a class and persists it under the product key', () => {
    applyTheme('dark')
    expect(document.documentElement.classList.contains('dark')).toBe(true)
    expect(localStorage.getItem(THEME_STORAGE_KEY)).toBe('dark')
    expect(THEME_STORAGE_KEY).toContain('meshwork')
    expect(readTheme()).toBe('dark')
    applyTheme('light')
    expect(document.documentElement.classList.contains('dark')).toBe(false)
    expect(readTheme()).toBe('light')
  })
})
