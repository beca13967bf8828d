/**
 * @module Debian's Chromium driven by playwright-core, plus screenshots and an axe check.
 */
import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { chromium, type Browser, type Locator, type Page } from 'playwright-core'
import { repoRoot } from './web-build.ts'

export const CHROMIUM_PATH = '/usr/bin/chromium'
export const screenshotDir = join(repoRoot, 'e2e/screenshots')

export class MissingChromiumError extends Error {
  constructor() {
    super(
      `Chromium is missing at ${CHROMIUM_PATH}: install it (apt-get install chromium); .ci/run does`,
    )
    this.name = 'MissingChromiumError'
  }
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
}

/** Saves e2e/screenshots/<name>.png (the CI artifact folder): the viewport, or one element. */
export async function screenshot(page: Page, name: string, element?: Locator): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true })
  const path = join(screenshotDir, `${name.replace(/[^a-z0-9-]+/gi, '-').toLowerCase()}.png`)
  if (element) await element.screenshot({ path })
  else await page.screenshot({ path })
}

const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js')

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: Array<{ target: string[]; failureSummary?: string }>
}

/** Runs axe on the page; returns the serious and critical violations, readable in a failure. */
export async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: an inline <script> tag would be refused by the app's
  // Content-Security-Policy.
  await page.evaluate(readFileSync(axePath, 'utf8'))
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: { run: (ctx: Document, o: object) => Promise<{ violations: unknown[] }> }
      }
    ).axe
    const result = await axe.run(document, { resultTypes: ['violations'] })
    return result.violations as AxeViolation[]
  })
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.impact} ${v.id}: ${v.help} -> ${v.nodes
          .slice(0, 4)
          .map(
            (n) =>
              `${n.target.join(' ')} (${(n.failureSummary ?? '').replace(/\s+/g, ' ').slice(0, 160)})`,
          )
          .join(' | ')}`,
    )
}
