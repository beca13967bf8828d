/**
 * @module One screen state in the four looks the issue asks for: desktop (1280 px) and phone
 * (390 px), light and dark. Each look is screenshotted and checked with axe; on the phone, the
 * page must not scroll sideways.
 */
import type { Page } from 'playwright-core'
import { screenshot, seriousViolations } from './browser.ts'

export const DESKTOP = { width: 1280, height: 800 }
export const PHONE = { width: 390, height: 844 }

export interface CaptureOptions {
  /** Brings the state back after the viewport became a phone's (e.g. closes the sidebar). */
  phone?: (page: Page) => Promise<void>
  /** Brings the state back after the viewport became a desktop's again. */
  desktop?: (page: Page) => Promise<void>
}

const frames = (page: Page) =>
  page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))))

/** Resolves when no finite animation or transition runs (a sidebar sliding, a toast fading in). */
async function settled(page: Page) {
  // First let a change just made (a click, a class) reach the styles, so its transition exists.
  await frames(page)
  await page.waitForFunction(() =>
    document
      .getAnimations()
      .every((a) => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity),
  )
  // Then painted before the screenshot and the contrast check.
  await frames(page)
}

async function setTheme(page: Page, theme: 'light' | 'dark') {
  await page.evaluate((t) => {
    document.documentElement.classList.toggle('dark', t === 'dark')
    document.documentElement.style.colorScheme = t
  }, theme)
  await settled(page)
}

/** Returns every problem found (axe's serious/critical violations, sideways scrolling). */
export async function captureAll(
  page: Page,
  name: string,
  options: CaptureOptions = {},
): Promise<string[]> {
  const problems: string[] = []
  for (const [look, size] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    await page.setViewportSize(size)
    await (look === 'phone' ? options.phone : options.desktop)?.(page)
    await settled(page)
    if (look === 'phone') {
      const wide = await page.evaluate(() => document.documentElement.scrollWidth)
      if (wide > PHONE.width)
        problems.push(`phone: the page is ${wide}px wide, wider than ${PHONE.width}px`)
    }
    for (const theme of ['light', 'dark'] as const) {
      await setTheme(page, theme)
      await screenshot(page, `${name}-${look}-${theme}`)
      problems.push(...(await seriousViolations(page)).map((v) => `${look} ${theme}: ${v}`))
    }
  }
  await page.setViewportSize(DESKTOP)
  await setTheme(page, 'light')
  await options.desktop?.(page)
  return problems
}
