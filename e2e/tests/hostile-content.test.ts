/**
 * Answers are written by nodes that anyone may run, and links are posted by anyone: neither may
 * take the app down for the person reading them. Seeded server-side, opened in Chromium.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import { launchBrowser } from '../harness/browser.ts'
import {
  api,
  createAsServer,
  createUser,
  modelId,
  openAs,
  startCoordinator,
  type Coordinator,
  type TestUser,
} from '../harness/coordinator.ts'

describe('hostile answers', () => {
  let server: Coordinator
  let browser: Browser
  let user: TestUser

  beforeAll(async () => {
    server = await startCoordinator()
    browser = await launchBrowser()
    user = await createUser(server, 'hostile')
  })
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  /** A conversation whose one answer is `response`, as a node could have written it. */
  async function conversationWith(response: string): Promise<string> {
    const model = await modelId(server)
    const conv = await api<{ id: string }>(
      server,
      'POST',
      '/api/collections/conversations/records',
      { user: user.id, model, title: 'Hostile answer' },
      user.token,
    )
    await createAsServer(server, 'requests', {
      user: user.id,
      conversation: conv.id,
      model,
      prompt: 'Tell me something',
      response,
      status: 'completed',
      tokens_input: 4,
      tokens_output: 12,
      is_partial: false,
    })
    return conv.id
  }

  // Ten kilobytes of nesting overflowed the markdown parser's stack: the render threw and the
  // router's error page replaced the whole app, on every visit to the conversation.
  for (const [name, response] of [
    ['10,000 nested quotes', `${'>'.repeat(10000)} the end of the quote`],
    ['5,000 unmatched asterisks each side', `${'*'.repeat(5000)}a${'*'.repeat(5000)} the end`],
  ]) {
    it(`an answer of ${name} leaves the chat usable`, async () => {
      const id = await conversationWith(response)
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
      try {
        const page = await context.newPage()
        await openAs(page, server, user, `/chat?c=${id}`)
        // The answer's text is readable, and the rest of the screen is still there.
        await page.getByText('Tell me something').waitFor()
        expect(await page.locator('.markdown').last().textContent()).toContain('the end')
        await page.getByRole('button', { name: 'Copy answer' }).waitFor()
        await page.getByRole('textbox', { name: 'Message' }).waitFor()
        expect(await page.getByText('Unexpected Application Error').count()).toBe(0)
      } finally {
        await context.close()
      }
    })
  }

  // A sign-in link anyone can post (in an answer, say) whose return path a browser reads as
  // another host: the router refused it and showed its error page instead of the app.
  it('a sign-in link returning to another host lands in the app instead', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    try {
      const page = await context.newPage()
      await page.goto(`${server.url}/login?return=/%5Cexample.org/x`)
      await page.getByLabel('Email').fill(user.email)
      await page.getByLabel('Password').fill(user.password)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('button', { name: 'Account menu' }).waitFor()
      expect(new URL(page.url()).origin).toBe(server.url)
      expect(await page.getByText('Unexpected Application Error').count()).toBe(0)
    } finally {
      await context.close()
    }
  })
})
