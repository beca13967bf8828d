/**
 * Security headers against the real coordinator and the built web app in Chromium: every screen
 * runs under the app's Content-Security-Policy with no `securitypolicyviolation` event and no
 * console error; the check itself is shown to catch a violation; the API and the app send nosniff,
 * no-referrer and frame-ancestors 'none', and the app cannot be framed by another site; the approve
 * page names the device from the flow, not from its URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchBrowser } from '../harness/browser.ts'
import {
  api,
  createAsServer,
  createUser,
  modelId,
  openAs,
  seedConversation,
  startCoordinator,
  type Coordinator,
  type TestUser,
} from '../harness/coordinator.ts'

interface Watched {
  page: Page
  /** CSP violations and console errors seen so far. */
  problems(): Promise<string[]>
}

describe('security headers and the content security policy', () => {
  let server: Coordinator
  let browser: Browser
  let user: TestUser
  let conversationId: string
  const contexts: BrowserContext[] = []

  beforeAll(async () => {
    server = await startCoordinator()
    browser = await launchBrowser()
    user = await createUser(server, 'csp')
    conversationId = await seedConversation(server, user, 2, 'Headers Chat')
    const node = await createAsServer(server, 'nodes', {
      user: user.id,
      device_name: 'CSP Box',
      status: 'online',
      is_active: true,
    })
    await createAsServer(server, 'node_models', {
      node: node.id,
      model: await modelId(server),
      requested_download: true,
      requested_serving: true,
      is_downloaded: true,
      is_serving: true,
      tokens_per_second: 12.5,
      download_progress: '100',
    })
  })
  afterAll(async () => {
    for (const c of contexts) await c.close()
    await browser?.close()
    await server?.stop()
  })

  async function watched(): Promise<Watched> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    contexts.push(context)
    // Runs before any page script (through the DevTools protocol, which no CSP restricts).
    await context.addInitScript(() => {
      const seen: string[] = []
      ;(globalThis as unknown as { __csp: string[] }).__csp = seen
      document.addEventListener('securitypolicyviolation', (e) => {
        seen.push(
          `${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} at ${e.sourceFile}:${e.lineNumber}`,
        )
      })
    })
    const page = await context.newPage()
    const errors: string[] = []
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(`console: ${msg.text()}`)
    })
    page.on('pageerror', (err) => errors.push(`page error: ${err.message}`))
    return {
      page,
      async problems() {
        const csp = await page.evaluate(
          () => (globalThis as unknown as { __csp?: string[] }).__csp ?? [],
        )
        return [...csp.map((v) => `csp: ${v}`), ...errors]
      },
    }
  }

  /** Lets late work (charts, polling, the realtime stream) run before looking. */
  const settle = (page: Page) => page.waitForTimeout(600)

  it('the check itself catches a violation', async () => {
    const { page, problems } = await watched()
    await page.goto(`${server.url}/login`)
    await page.getByRole('heading', { name: 'Sign in to your account' }).waitFor()
    await page.evaluate(() => {
      const script = document.createElement('script')
      script.textContent = 'window.injected = true'
      document.body.appendChild(script)
    })
    await settle(page)
    const found = await problems()
    expect(found.some((p) => p.startsWith('csp: script-src'))).toBe(true)
    expect(
      await page.evaluate(() => (globalThis as unknown as { injected?: boolean }).injected),
    ).toBeUndefined()
  })

  const screens: Array<[string, (page: Page) => Promise<void>]> = [
    [
      '/login',
      async (page) => {
        await page.goto(`${server.url}/login`)
        await page.getByRole('heading', { name: 'Sign in to your account' }).waitFor()
        await page.getByRole('button', { name: 'Sign in' }).click()
        await page.getByText('Please fill in all fields').waitFor()
      },
    ],
    [
      '/chat',
      async (page) => {
        await openAs(page, server, user, `/chat?c=${conversationId}`)
        await page.getByText('Reply number 2').waitFor()
      },
    ],
    [
      '/nodes with the edit dialog',
      async (page) => {
        await openAs(page, server, user, '/nodes')
        await page.getByRole('button', { name: 'Edit CSP Box' }).click()
        await page.getByRole('dialog', { name: 'Edit Node' }).getByText('Stories 260K').waitFor()
      },
    ],
    [
      '/nodes/setup',
      async (page) => {
        await openAs(page, server, user, '/nodes/setup')
        await page.getByRole('heading', { name: /Add a Node to/ }).waitFor()
      },
    ],
    [
      '/network',
      async (page) => {
        await openAs(page, server, user, '/network')
        await page.getByText('Network Metrics (Last 24 Hours)').waitFor()
        await page
          .getByRole('cell', { name: /CSP Box/ })
          .first()
          .waitFor()
      },
    ],
    [
      '/profile',
      async (page) => {
        await openAs(page, server, user, '/profile')
        await page.getByText('Admin Credit').first().waitFor()
      },
    ],
    [
      '/auth/approve-node',
      async (page) => {
        const flow = await api<{ approve_url: string }>(server, 'POST', '/api/auth/start-flow', {
          device_name: 'CSP Laptop',
        })
        const { pathname, search } = new URL(flow.approve_url)
        await openAs(page, server, user, `${pathname}${search}`)
        await page.getByRole('button', { name: 'Approve Connection' }).waitFor()
        await page.getByText('CSP Laptop').waitFor()
      },
    ],
    [
      '/auth/approve-node without a token',
      async (page) => {
        await openAs(page, server, user, '/auth/approve-node')
        await page.getByText('Invalid Request').waitFor()
      },
    ],
  ]

  for (const [name, open] of screens) {
    it(`${name} runs under the policy with no violation and no console error`, async () => {
      const { page, problems } = await watched()
      await open(page)
      await settle(page)
      expect(await problems()).toEqual([])
    })
  }

  it('dark theme and the theme switch run under the policy too (the inline start-up script is allowed by its hash)', async () => {
    const { page, problems } = await watched()
    await page.context().addInitScript(() => localStorage.setItem('meshwork-theme', 'dark'))
    await openAs(page, server, user, '/profile')
    expect(await page.evaluate(() => document.documentElement.classList.contains('dark'))).toBe(
      true,
    )
    await settle(page)
    expect(await problems()).toEqual([])
  })

  it('sends the headers on pages and API answers', async () => {
    const pageRes = await fetch(`${server.url}/chat`)
    const csp = pageRes.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("default-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'/)
    // Inline styles only with the page's own nonce, new on every load and handed to the app.
    const nonce = /style-src 'self' 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1]
    expect(nonce).toBeTruthy()
    expect(await pageRes.text()).toContain(`<meta name="csp-nonce" content="${nonce}">`)
    const root = await fetch(`${server.url}/`)
    const rootCsp = root.headers.get('content-security-policy') ?? ''
    expect(rootCsp.replace(/'nonce-[^']+'/, '')).toBe(csp.replace(/'nonce-[^']+'/, ''))
    expect(rootCsp).not.toContain(nonce)
    for (const res of [
      pageRes,
      await fetch(`${server.url}/api/health`),
      await fetch(`${server.url}/api/collections/nope/records`),
    ]) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('referrer-policy')).toBe('no-referrer')
      expect(res.headers.get('x-frame-options')).toBe('DENY')
    }
    const apiRes = await fetch(`${server.url}/api/health`)
    expect(apiRes.headers.get('content-security-policy')).toBe(
      "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    )
  })

  it('the approve page names the device from the flow, never from a link that says otherwise', async () => {
    const { page, problems } = await watched()
    const flow = await api<{ approve_url: string }>(server, 'POST', '/api/auth/start-flow', {
      device_name: 'Real Laptop',
    })
    const url = new URL(flow.approve_url)
    // A link forged to make the owner approve "their bank": the URL's label is not believed.
    url.searchParams.set('device', 'Your Bank (official)')
    await openAs(page, server, user, `${url.pathname}${url.search}`)
    await page.getByRole('button', { name: 'Approve Connection' }).waitFor()
    await page.getByText('Real Laptop').first().waitFor()
    expect(await page.getByText('Your Bank (official)').count()).toBe(0)
    expect(await page.locator('body').innerText()).not.toContain('Your Bank')
    expect(await problems()).toEqual([])
  })

  it('cannot be framed by another site', async () => {
    const { page } = await watched()
    await page.setContent(
      `<html lang="en"><body><iframe title="framed" src="${server.url}/login"></iframe></body></html>`,
    )
    await page.waitForTimeout(1000)
    const frame = page.frames().find((f) => f !== page.mainFrame())!
    const framedHeading = await frame
      .getByRole('heading', { name: 'Sign in to your account' })
      .count()
      .catch(() => 0)
    expect(framedHeading).toBe(0)
  })
})
