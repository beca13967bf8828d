/** @module Theme preference: 'light' or 'dark', applied as the `dark` class on <html>. */

export type Theme = 'light' | 'dark'

/** Product-specific localStorage key (spec §3: not shown to users). */
export const THEME_STORAGE_KEY = 'meshwork-theme'

export function readTheme(): Theme {
  try {
    return localStorage.getItem(THEME_STORAGE_KEY) === 'dark' ? 'dark' : 'light'
  } catch {
    return 'light'
  }
}

export function applyTheme(theme: Theme): void {
  document.documentElement.classList.toggle('dark', theme === 'dark')
  document.documentElement.style.colorScheme = theme
  try {
    localStorage.setItem(THEME_STORAGE_KEY, theme)
  } catch {
    // Private mode may refuse storage; the theme still applies for this visit.
  }
}
