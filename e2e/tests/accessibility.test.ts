/**
 * axe-core on every screen, in light and dark, against the real coordinator: no serious or
 * critical violations. Failures list each rule with the elements it caught.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchBrowser, screenshot, seriousViolations } from '../harness/browser.ts'
import {
  api,
  createAsServer,
  createUser,
  openAs,
  seedConversation,
  startCoordinator,
  type Coordinator,
  type TestUser,
} from '../harness/coordinator.ts'

type Theme = 'light' | 'dark'

describe('accessibility (axe)', () => {
  let server: Coordinator
  let browser: Browser
  let user: TestUser
  let conversationId: string
  const contexts: BrowserContext[] = []

  beforeAll(async () => {
    server = await startCoordinator()
    browser = await launchBrowser()
    user = await createUser(server, 'axe')
    conversationId = await seedConversation(server, user, 3, 'Stories About Dogs')
    await createAsServer(server, 'nodes', {
      user: user.id,
      device_name: 'Axe Box',
      status: 'online',
      is_active: true,
    })
  })
  afterAll(async () => {
    for (const c of contexts) await c.close()
    await browser?.close()
    await server?.stop()
  })

  async function newPage(theme: Theme): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    contexts.push(context)
    // The app reads its theme from storage at start (key from packages/web/src/lib/theme.ts).
    await context.addInitScript((t) => localStorage.setItem('meshwork-theme', t), theme)
    return context.newPage()
  }

  async function check(page: Page, name: string) {
    await screenshot(page, `axe-${name}`)
    const violations = await seriousViolations(page)
    expect(violations, `${name}:\n${violations.join('\n')}`).toEqual([])
  }

  it('the check itself catches a serious violation', async () => {
    const page = await newPage('light')
    await page.setContent('<html lang="en"><body><main><button></button></main></body></html>')
    await screenshot(page, 'axe-self-check')
    const violations = await seriousViolations(page)
    expect(violations.some((v) => v.startsWith('critical button-name'))).toBe(true)
  })

  for (const theme of ['light', 'dark'] as const) {
    describe(theme, () => {
      it('/login', async () => {
        const page = await newPage(theme)
        await page.goto(`${server.url}/login`)
        await page.getByRole('heading', { name: 'Sign in to your account' }).waitFor()
        await page.getByRole('button', { name: 'Sign in' }).click()
        await page.getByText('Please fill in all fields').waitFor()
        await check(page, `login-${theme}`)
      })

      it('/chat with a conversation', async () => {
        const page = await newPage(theme)
        await openAs(page, server, user, `/chat?c=${conversationId}`)
        await page.getByText('Reply number 3').waitFor()
        await page.getByText('Cost: 16 tokens').first().waitFor()
        await check(page, `chat-${theme}`)
      })

      it('/nodes with the edit dialog open', async () => {
        const page = await newPage(theme)
        await openAs(page, server, user, '/nodes')
        await page.getByRole('button', { name: 'Edit Axe Box' }).click()
        const dialog = page.getByRole('dialog', { name: 'Edit Node' })
        await dialog.getByText('Stories 260K').waitFor()
        await page.waitForTimeout(250) // let the open animation finish before measuring contrast
        await check(page, `nodes-edit-${theme}`)
      })

      it('/nodes/setup', async () => {
        const page = await newPage(theme)
        await openAs(page, server, user, '/nodes/setup')
        await page.getByRole('heading', { name: /Add a Node to/ }).waitFor()
        await check(page, `nodes-setup-${theme}`)
      })

      it('/network', async () => {
        const page = await newPage(theme)
        await openAs(page, server, user, '/network')
        await page.getByText('Network Metrics (Last 24 Hours)').waitFor()
        await page
          .getByRole('cell', { name: /Axe Box/ })
          .first()
          .waitFor()
        await check(page, `network-${theme}`)
      })

      it('/profile', async () => {
        const page = await newPage(theme)
        await openAs(page, server, user, '/profile')
        await page.getByText('Admin Credit').first().waitFor()
        await check(page, `profile-${theme}`)
      })

      it('/auth/approve-node with a token', async () => {
        const flow = await api<{ approve_url: string }>(server, 'POST', '/api/auth/start-flow', {
          device_name: 'Axe Laptop',
        })
        const { pathname, search } = new URL(flow.approve_url)
        const page = await newPage(theme)
        await openAs(page, server, user, `${pathname}${search}`)
        await page.getByRole('button', { name: 'Approve Connection' }).waitFor()
        await check(page, `approve-node-${theme}`)
      })

      it('/auth/approve-node without a token', async () => {
        const page = await newPage(theme)
        await openAs(page, server, user, '/auth/approve-node')
        await page.getByText('Invalid Request').waitFor()
        await check(page, `approve-node-missing-token-${theme}`)
      })
    })
  }
})
