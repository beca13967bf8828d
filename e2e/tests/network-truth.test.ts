/**
 * Issue 9 item 7 and the phone layouts: the Network screen tells the truth (Redis 'Not
 * configured' on the embedded bus, an hour axis labelled every 3 clock hours, the last good
 * figures kept and marked stale while the server cannot be reached), and at 390 px the node
 * table's Edit/Delete and every Network tab are on screen. Light and dark, axe clean.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { launchBrowser, screenshot, seriousViolations } from '../harness/browser.ts'
import {
  createAsServer,
  createUser,
  modelId,
  openAs,
  seedConversation,
  startCoordinator,
  type Coordinator,
  type TestUser,
} from '../harness/coordinator.ts'

type Theme = 'light' | 'dark'
const PHONE = { width: 390, height: 844 }
const DESKTOP = { width: 1280, height: 800 }

describe('Network screen truth and phone layouts', () => {
  let server: Coordinator
  let browser: Browser
  let user: TestUser
  const contexts: BrowserContext[] = []

  beforeAll(async () => {
    server = await startCoordinator()
    browser = await launchBrowser()
    user = await createUser(server, 'phone')
    await seedConversation(server, user, 4, 'Seeded Stories')
    const model = await modelId(server)
    for (const device_name of ['Studio Workstation With A Long Name', 'Attic Box']) {
      const node = await createAsServer(server, 'nodes', {
        user: user.id,
        device_name,
        status: 'online',
        is_active: true,
      })
      await createAsServer(server, 'node_models', {
        node: node.id,
        model,
        requested_download: true,
        requested_serving: true,
        is_downloaded: true,
        is_serving: true,
        tokens_per_second: 1200,
      })
    }
  })
  afterAll(async () => {
    for (const c of contexts) await c.close()
    await browser?.close()
    await server?.stop()
  })

  async function newPage(theme: Theme, viewport = PHONE): Promise<Page> {
    const context = await browser.newContext({ viewport })
    contexts.push(context)
    await context.addInitScript((t) => localStorage.setItem('meshwork-theme', t), theme)
    return context.newPage()
  }

  /** The element lies wholly inside the viewport's width (no horizontal scrolling needed). */
  async function expectOnScreen(page: Page, element: Locator) {
    await element.scrollIntoViewIfNeeded()
    const box = await element.boundingBox()
    const width = page.viewportSize()!.width
    expect(box, 'element is rendered').not.toBeNull()
    expect(box!.x).toBeGreaterThanOrEqual(0)
    expect(box!.x + box!.width).toBeLessThanOrEqual(width)
    expect(await element.isVisible()).toBe(true)
  }

  async function expectAxeClean(page: Page, name: string) {
    const violations = await seriousViolations(page)
    expect(violations, `${name}:\n${violations.join('\n')}`).toEqual([])
  }

  for (const theme of ['light', 'dark'] as const) {
    it(`My Nodes at 390 px: every node's Edit and Delete are on screen (${theme})`, async () => {
      const page = await newPage(theme)
      await openAs(page, server, user, '/nodes')
      for (const device of ['Studio Workstation With A Long Name', 'Attic Box']) {
        await expectOnScreen(page, page.getByRole('button', { name: `Edit ${device}` }))
        await expectOnScreen(page, page.getByRole('button', { name: `Delete ${device}` }))
      }
      // Nothing on the page scrolls sideways.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
        PHONE.width,
      )
      await page.getByRole('button', { name: 'Edit Attic Box' }).scrollIntoViewIfNeeded()
      await screenshot(page, `phone-nodes-${theme}`)
      await expectAxeClean(page, `phone-nodes-${theme}`)
      await page.getByRole('button', { name: 'Edit Attic Box' }).click()
      await page.getByRole('dialog', { name: 'Edit Node' }).getByText('Stories 260K').waitFor()
      await screenshot(page, `phone-nodes-edit-${theme}`)
    })

    it(`Network at 390 px: every tab is on screen and opens its chart (${theme})`, async () => {
      const page = await newPage(theme)
      await openAs(page, server, user, '/network')
      await page.getByText('Network Metrics (Last 24 Hours)').waitFor()
      const tabs = ['Requests Over Time', 'Performance Metrics', 'Job Queue']
      for (const name of tabs) await expectOnScreen(page, page.getByRole('tab', { name }))
      for (const name of tabs.slice().reverse()) {
        await page.getByRole('tab', { name }).click()
        expect(await page.getByRole('tab', { name }).getAttribute('aria-selected')).toBe('true')
      }
      await page.locator('.recharts-cartesian-axis-tick-value').first().waitFor()
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
        PHONE.width,
      )
      await page.getByText('Network Metrics (Last 24 Hours)').scrollIntoViewIfNeeded()
      await screenshot(page, `phone-network-${theme}`)
      await expectAxeClean(page, `phone-network-${theme}`)
    })
  }

  it('shows Redis as not configured on the embedded bus', async () => {
    const page = await newPage('light', DESKTOP)
    await openAs(page, server, user, '/network')
    const health = page
      .locator('section, div')
      .filter({ hasText: /^System Health/ })
      .last()
    const redis = page.locator('dl > div', { hasText: 'Redis' })
    await redis.getByText('Not configured').waitFor()
    expect(await page.locator('dl > div', { hasText: 'Database' }).innerText()).toMatch(/Online/)
    await screenshot(page, 'network-redis-not-configured', health)
  })

  it('labels the hour axis every 3 clock hours, evenly spaced', async () => {
    const page = await newPage('light', DESKTOP)
    await openAs(page, server, user, '/network')
    const ticks = page.locator('.recharts-xAxis-tick-labels .recharts-cartesian-axis-tick-value')
    await ticks.first().waitFor()
    const shown = await ticks.evaluateAll((els) =>
      els.map((el) => ({
        text: el.textContent ?? '',
        x: el.getBoundingClientRect().left + el.getBoundingClientRect().width / 2,
      })),
    )
    expect(shown).toHaveLength(8)
    const hours = shown.map((t) => Number.parseInt(t.text, 10))
    for (const [i, h] of hours.entries()) {
      expect(h % 3).toBe(0)
      if (i > 0) expect((h - hours[i - 1] + 24) % 24).toBe(3)
    }
    const gaps = shown.slice(1).map((t, i) => t.x - shown[i].x)
    for (const gap of gaps) expect(Math.abs(gap - gaps[0])).toBeLessThan(2)
    await screenshot(page, 'network-hour-axis', page.getByRole('tabpanel'))
  })

  it('keeps the last figures, marked stale, while the server cannot be reached', async () => {
    const page = await newPage('dark', DESKTOP)
    await openAs(page, server, user, '/network')
    const total = page.locator('dl > div', { hasText: /^Total/ }).last()
    await page.getByRole('cell', { name: 'Attic Box' }).waitFor()
    const before = await total.innerText()
    expect(before).toMatch(/4/)
    // The server goes away: every API call fails from now on.
    await page.route('**/api/**', (route) => route.abort('connectionrefused'))
    const notice = page.getByRole('status').filter({ hasText: 'The server cannot be reached.' })
    await notice.waitFor({ timeout: 20_000 })
    expect(await notice.innerText()).toMatch(/Showing the last figures loaded at/)
    expect(await total.innerText()).toBe(before)
    await page.getByRole('cell', { name: 'Attic Box' }).waitFor()
    expect(await page.locator('dl > div', { hasText: 'API' }).innerText()).toMatch(/Offline/)
    await screenshot(page, 'network-stale-figures')
    await expectAxeClean(page, 'network-stale-figures')
    // Back again: the notice goes and the figures are live.
    await page.unroute('**/api/**')
    await notice.waitFor({ state: 'detached', timeout: 20_000 })
    expect(await page.locator('dl > div', { hasText: 'API' }).innerText()).toMatch(/Online/)
  })
})
