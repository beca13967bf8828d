/**
 * Account screens in a real browser against a real coordinator: sign up, theme persisted across
 * reload, the small-screen slide-in menu, and paging through transactions on the profile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { applyEntry } from '../../packages/server/src/core/ledger/ledger-entry.ts'
import { withUnitOfWork } from '../../packages/server/src/core/records/unit-of-work.ts'
import { launchBrowser, screenshot } from '../harness/browser.ts'
import { createUser, openAs, startCoordinator, type Coordinator } from '../harness/coordinator.ts'

describe('account screens', () => {
  let server: Coordinator
  let browser: Browser
  let context: BrowserContext
  let page: Page

  beforeAll(async () => {
    server = await startCoordinator()
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })
  async function freshPage(viewport = { width: 1280, height: 800 }) {
    await context?.close()
    context = await browser.newContext({ viewport })
    page = await context.newPage()
    return page
  }

  it('signs up and lands on /chat signed in', async () => {
    await freshPage()
    await page.goto(`${server.url}/login`)
    await page.getByRole('heading', { name: 'Sign in to your account' }).waitFor()
    await page.getByRole('button', { name: "Don't have an account? Create one" }).click()
    await page.getByRole('heading', { name: 'Create your account' }).waitFor()
    const email = `newcomer${Date.now().toString(36)}@example.com`
    await page.getByLabel('Email').fill(email)
    await page.getByLabel('Password').fill('password123')
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.waitForURL(/\/chat$/)
    const avatar = page.getByRole('button', { name: 'Account menu' })
    await avatar.waitFor()
    expect(await avatar.textContent()).toBe('N')
    await page.getByText('Tokens available: 1,000').waitFor()
    await screenshot(page, 'sign-up')
    const row = await server.core.database.db
      .selectFrom('users')
      .select(['email', 'name'])
      .where('email', '=', email)
      .executeTakeFirstOrThrow()
    expect(row.name).toBe(email.split('@')[0])
  })

  it('switches to dark mode and keeps it across a reload', async () => {
    await freshPage()
    const user = await createUser(server, 'theme')
    await openAs(page, server, user, '/chat')
    const isDark = () => page.evaluate(() => document.documentElement.classList.contains('dark'))
    await page.getByRole('button', { name: 'Account menu' }).click()
    expect(await isDark()).toBe(false)
    await page.getByRole('menuitem', { name: 'Dark mode' }).click()
    await page.waitForFunction(() => document.documentElement.classList.contains('dark'))
    await page.keyboard.press('Escape')
    await page.reload()
    await page.getByRole('button', { name: 'Account menu' }).waitFor()
    expect(await isDark()).toBe(true)
    await page.getByRole('heading', { name: 'Conversations' }).waitFor()
    await screenshot(page, 'theme-dark-after-reload')
    await page.getByRole('button', { name: 'Account menu' }).click()
    await page.getByRole('menuitem', { name: 'Dark mode' }).click()
    await page.waitForFunction(() => !document.documentElement.classList.contains('dark'))
    await page.reload()
    await page.getByRole('button', { name: 'Account menu' }).waitFor()
    expect(await isDark()).toBe(false)
  })

  it('navigates with the slide-in menu at 390 px wide', async () => {
    await freshPage({ width: 390, height: 844 })
    const user = await createUser(server, 'mobile')
    await openAs(page, server, user, '/chat')
    const open = page.getByRole('button', { name: 'Open menu' })
    await open.waitFor()
    // The top bar's own links give way to the menu on small screens.
    const menu = page.getByRole('dialog', { name: 'Meshwork' })
    expect(await menu.isVisible()).toBe(false)
    await open.click()
    await menu.waitFor()
    for (const name of ['Chat', 'Nodes', 'Network']) {
      expect(await menu.getByRole('link', { name, exact: true }).isVisible()).toBe(true)
    }
    await page.waitForTimeout(300) // the slide-in animation, so the screenshot shows it settled
    await screenshot(page, 'small-screen-menu')
    await menu.getByRole('link', { name: 'Network', exact: true }).click()
    await page.waitForURL(/\/network$/)
    await menu.waitFor({ state: 'hidden' })
    await page.getByRole('heading', { name: 'Network Status' }).waitFor()
  })

  it('pages through more than 50 transactions on the profile', async () => {
    await freshPage()
    const user = await createUser(server, 'ledger')
    await withUnitOfWork(server.core, async (uow) => {
      for (let i = 1; i <= 60; i++) {
        await applyEntry(uow, {
          user: user.id,
          type: i % 2 ? 'credit_admin' : 'debit_admin',
          amount: i,
          description: `Entry ${i}`,
        })
      }
    })
    const count = await server.core.database.db
      .selectFrom('user_credit_txs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('user', '=', user.id)
      .executeTakeFirstOrThrow()
    const total = Number(count.n)
    expect(total).toBeGreaterThan(50)
    const pages = Math.ceil(total / 50)

    await openAs(page, server, user, '/profile')
    await page.getByText(`Page 1 of ${pages}`).waitFor()
    const rows = page.locator('table tbody tr')
    expect(await rows.count()).toBe(50)
    expect(await page.getByRole('button', { name: 'Previous' }).isDisabled()).toBe(true)
    await screenshot(page, 'profile-page-1')
    await page.getByRole('button', { name: 'Next' }).click()
    await page.getByText(`Page 2 of ${pages}`).waitFor()
    await page.waitForFunction(
      (n) => document.querySelectorAll('table tbody tr').length === n,
      total - 50,
    )
    expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true)
    await expect(page.getByText('Admin Credit').first().isVisible()).resolves.toBe(true)
    await screenshot(page, 'profile-page-2')
    await page.getByRole('button', { name: 'Previous' }).click()
    await page.getByText(`Page 1 of ${pages}`).waitFor()
    await page.waitForFunction(() => document.querySelectorAll('table tbody tr').length === 50)
  })
})
