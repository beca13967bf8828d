/**
 * API keys on the Profile page in a real browser (issue 10): create one (the secret shown once,
 * copied with the copy button), use it with the official `openai` client against a real node
 * (llama.cpp on stories260K), see its use in the list and the history, revoke it through the
 * in-app confirmation, and find it refused.
 */
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchBrowser, screenshot } from '../harness/browser.ts'
import {
  createUser,
  modelId,
  openAs,
  startCoordinator,
  type Coordinator,
} from '../harness/coordinator.ts'
import { linkNodeByApi, runAgent, serveModel, type NodeAgent } from '../harness/node-agent.ts'

describe('API keys on the Profile page', () => {
  let server: Coordinator
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let node: NodeAgent

  beforeAll(async () => {
    server = await startCoordinator()
    browser = await launchBrowser()
    const owner = await createUser(server, 'host')
    const linked = await linkNodeByApi(server, owner, 'Stories box')
    node = await runAgent(server, linked)
    await serveModel(server, owner, linked.nodeId, await modelId(server))
  })
  afterAll(async () => {
    await context?.close()
    await browser?.close()
    await node?.stop()
    await server?.stop()
  })

  it('creates a key shown once, copies it, uses it, and revokes it after confirming', async () => {
    context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      permissions: ['clipboard-read', 'clipboard-write'],
    })
    page = await context.newPage()
    const user = await createUser(server, 'coder')
    await openAs(page, server, user, '/profile')
    const card = page.getByRole('region', { name: 'API keys' })
    await page.getByText('No API keys yet').waitFor()

    await page.getByLabel('Key name').fill('Laptop script')
    await page.getByRole('button', { name: 'Create key' }).click()
    const shown = page.getByLabel('New API key')
    await shown.waitFor()
    const key = (await shown.textContent())!
    expect(key).toMatch(/^mw-[A-Za-z0-9]{43}$/)
    await page.getByText('You won’t be able to see it again').waitFor()
    await page.getByRole('button', { name: 'Copy', exact: true }).click()
    await page.getByRole('button', { name: 'Copied' }).waitFor()
    const copied = await page.evaluate(() => navigator.clipboard.readText())
    expect(copied).toBe(key)
    await screenshot(page, 'api-key-created', card)

    // Dismissed, the secret is gone from the page for good; the list shows its hint.
    await page.getByRole('button', { name: 'Done' }).click()
    await shown.waitFor({ state: 'detached' })
    const row = page
      .getByRole('table', { name: 'Your API keys' })
      .getByRole('row', { name: /Laptop script/ })
    await row.getByText('Never').waitFor()
    expect(await row.textContent()).toContain(`mw-…${key.slice(-4)}`)
    expect(await page.content()).not.toContain(key)

    // Used from code with the copied key.
    const client = new OpenAI({ apiKey: copied, baseURL: `${server.url}/v1`, maxRetries: 0 })
    const answer = await client.chat.completions.create({
      model: 'stories260K',
      messages: [{ role: 'user', content: 'Once upon a time there was a cat.' }],
      max_tokens: 20,
    })
    expect(answer.choices[0].message.content).toMatch(/\w/)
    const cost = answer.usage!.total_tokens

    // After a reload: last used is set, and the history names the key beside the model.
    await page.reload()
    await row.waitFor()
    await expect.poll(async () => row.getByText('Never').count()).toBe(0)
    expect(await row.textContent()).toContain(String(cost))
    const spent = page.getByRole('row', { name: /via API key “Laptop script”/ })
    await spent.waitFor()
    expect(await spent.textContent()).toContain(`Spent on inference request (Stories 260K)`)
    expect(await spent.textContent()).toContain(`-${cost}`)
    await spent.scrollIntoViewIfNeeded()
    await screenshot(page, 'api-key-used')

    // Revoke asks first; Cancel keeps the key.
    await row.getByRole('button', { name: 'Revoke' }).click()
    const dialog = page.getByRole('dialog', { name: 'Revoke API key?' })
    await dialog.waitFor()
    expect(await dialog.textContent()).toContain('Laptop script')
    await screenshot(page, 'api-key-revoke-confirm')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'detached' })
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['stories260K'])

    await row.getByRole('button', { name: 'Revoke' }).click()
    await dialog.getByRole('button', { name: 'Revoke key' }).click()
    await page.getByText('No API keys yet').waitFor()
    await expect(client.models.list()).rejects.toMatchObject({ status: 401 })
    await screenshot(page, 'api-key-revoked', card)
  })
})
