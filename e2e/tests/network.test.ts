/**
 * The whole product with a real node: a @meshwork/node agent running llama.cpp (one thread) on
 * stories260K, linked through the approve page, driven through the Edit Node dialog, answering a
 * chat in the browser; then the conversation is renamed and deleted and the Network charts fill.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, screenshot } from '../harness/browser.ts'
import {
  api,
  createUser,
  modelId,
  modelMirror,
  openAs,
  startCoordinator,
  waitUntil,
  type Coordinator,
  type TestUser,
} from '../harness/coordinator.ts'
import {
  linkNode,
  runAgent,
  serveModel,
  type LinkedNode,
  type NodeAgent,
} from '../harness/node-agent.ts'

describe('with a real node', () => {
  let server: Coordinator
  let browser: Browser
  let page: Page
  let owner: TestUser
  let linked: LinkedNode
  let node: NodeAgent | undefined
  const dialogs: string[] = []

  beforeAll(async () => {
    if (!existsSync(join(modelMirror, 'stories260K.gguf')))
      throw new Error(`The test models are missing from ${modelMirror}`)
    server = await startCoordinator()
    browser = await launchBrowser()
    owner = await createUser(server, 'owner')
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    // A native box (there should be none: confirmations are in-app) is recorded and accepted.
    page.on('dialog', (d) => {
      dialogs.push(d.message())
      void d.accept()
    })
    await openAs(page, server, owner, '/chat')
  })
  afterAll(async () => {
    await node?.stop()
    await browser?.close()
    await server?.stop()
  })

  it('links a node through the approve page and lands on /nodes', async () => {
    let approveUrl = ''
    let approving: Promise<void> = Promise.resolve()
    const linking = linkNode(server, 'E2E Box', (url) => {
      approveUrl = url
      approving = (async () => {
        const { pathname, search } = new URL(url)
        await page.goto(`${server.url}${pathname}${search}`)
        try {
          await page
            .getByRole('heading', { name: 'Authorize Node Connection' })
            .waitFor({ timeout: 30_000 })
        } catch (err) {
          await screenshot(page, 'approve-node-failure')
          throw new Error(
            `Approve page did not show; it reads: ${await page.locator('body').innerText()}`,
            { cause: err },
          )
        }
        await page.getByText('E2E Box').first().waitFor()
        await screenshot(page, 'approve-node')
        await page.getByRole('button', { name: 'Approve Connection' }).click()
      })()
    })
    await waitUntil(() => approveUrl, 30_000, 'approve URL')
    await approving
    linked = await linking
    expect(new URL(approveUrl).pathname).toBe('/auth/approve-node')
    expect(new URL(approveUrl).searchParams.get('device')).toBe('E2E Box')
    await page.waitForURL(/\/nodes$/)
    await page
      .getByRole('cell', { name: /E2E Box/ })
      .first()
      .waitFor()
    const row = await server.core.database.db
      .selectFrom('nodes')
      .select(['user', 'device_name'])
      .where('id', '=', linked.nodeId)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ user: owner.id, device_name: 'E2E Box' })
    node = await runAgent(server, linked)
    await waitUntil(
      async () =>
        (
          await server.core.database.db
            .selectFrom('nodes')
            .select('status')
            .where('id', '=', linked.nodeId)
            .executeTakeFirst()
        )?.status === 'online',
      30_000,
      'node online',
    )
    await screenshot(page, 'nodes-linked')
  })

  it('takes a model through download, serve, stop and delete in the Edit Node dialog', async () => {
    await page.reload()
    await page.getByRole('button', { name: 'Edit E2E Box' }).click()
    const dialog = page.getByRole('dialog', { name: 'Edit Node' })
    await dialog.waitFor()
    const row = dialog.locator('li', { hasText: 'Stories 260K' })
    // The node reports download progress through the record the dialog watches.
    const progress: string[] = []
    const off = server.core.events.on((change) => {
      if (change.collection.name === 'node_models')
        progress.push(String(change.row.download_progress))
    })
    await row.getByRole('button', { name: 'Download' }).click()
    await row.getByRole('button', { name: 'Start Serving' }).waitFor({ timeout: 30_000 })
    off()
    expect(progress.at(-1)).toBe('100')
    await row.getByText('Downloaded').waitFor()
    await screenshot(page, 'edit-node-downloaded')
    await row.getByRole('button', { name: 'Start Serving' }).click()
    await row.getByRole('button', { name: 'Stop Serving' }).waitFor({ timeout: 30_000 })
    await row.getByText(/Serving · \d+\.\d tok\/s/).waitFor()
    await screenshot(page, 'edit-node-serving')
    await row.getByRole('button', { name: 'Stop Serving' }).click()
    await row.getByRole('button', { name: 'Start Serving' }).waitFor({ timeout: 30_000 })
    await row.getByRole('button', { name: 'Delete' }).click()
    // An in-app dialog with the spec's question (no native confirm box).
    const ask = page.getByRole('alertdialog')
    await ask
      .getByText(
        'Are you sure you want to delete this model? This will remove the downloaded files from your node.',
      )
      .waitFor()
    await screenshot(page, 'edit-node-delete-confirm')
    await ask.getByRole('button', { name: 'Delete' }).click()
    await row.getByRole('button', { name: 'Download' }).waitFor({ timeout: 30_000 })
    expect(dialogs).toEqual([])
    const left = await server.core.database.db
      .selectFrom('node_models')
      .select('id')
      .where('node', '=', linked.nodeId)
      .execute()
    expect(left).toEqual([])
    await screenshot(page, 'edit-node-deleted')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'hidden' })
  })

  it('chats: a streamed answer with its cost', async () => {
    const stories = await modelId(server)
    await serveModel(server, owner, linked.nodeId, stories)
    const partials = new Map<string, number>()
    const off = server.core.events.on((change) => {
      if (change.collection.name !== 'requests' || !change.row.is_partial || !change.row.response)
        return
      const id = change.row.id as string
      partials.set(id, (partials.get(id) ?? 0) + 1)
    })
    try {
      await page.goto(`${server.url}/chat`)
      await page.getByText('No conversations yet').waitFor()
      await page.getByRole('button', { name: 'New chat' }).first().click()
      await page.waitForURL(/\/chat\?c=/)
      const message = page.getByRole('textbox', { name: 'Message' })
      await page.waitForFunction(
        () => document.querySelector('textarea')?.placeholder === 'What can I do for you today?',
      )
      await message.fill('Once upon a time, there was a little dog')
      await message.press('Enter')
      const log = page.getByRole('log', { name: 'Messages' })
      await log.getByText('Once upon a time, there was a little dog').waitFor()
      // While the answer streams in, the bubble is busy and already shows text.
      await log.locator('[aria-busy="true"]').first().waitFor({ timeout: 30_000 })
      const cost = log.getByText(/^Cost: \d+ tokens$/)
      await cost.waitFor({ timeout: 60_000 })
      await screenshot(page, 'chat-streamed-answer')

      const request = await server.core.database.db
        .selectFrom('requests')
        .selectAll()
        .where('user', '=', owner.id)
        .executeTakeFirstOrThrow()
      expect(request.status).toBe('completed')
      expect(partials.get(request.id as string) ?? 0).toBeGreaterThan(1)
      expect(await cost.textContent()).toBe(
        `Cost: ${Number(request.tokens_input) + Number(request.tokens_output)} tokens`,
      )
      const shown = (await log.locator('[aria-busy="false"]').first().innerText()).replace(
        /\s+/g,
        ' ',
      )
      const words = String(request.response)
        .replace(/\s+/g, ' ')
        .trim()
        .split(' ')
        .slice(0, 4)
        .join(' ')
      expect(shown).toContain(words)
      expect(await message.getAttribute('placeholder')).toBe('Reply...')
    } finally {
      off?.()
    }
  })

  it('shows the Network charts populated after completed requests', async () => {
    // Two more answers through the API, so the hourly buckets hold several requests.
    const conv = await server.core.database.db
      .selectFrom('conversations')
      .select(['id', 'model'])
      .where('user', '=', owner.id)
      .executeTakeFirstOrThrow()
    for (const prompt of ['The cat sat', 'A little bird']) {
      const sent = await api<{ request_id: string }>(
        server,
        'POST',
        '/api/chat/send',
        { conversation_id: conv.id, model_id: conv.model, prompt },
        owner.token,
      )
      await waitUntil(
        async () =>
          (
            await server.core.database.db
              .selectFrom('requests')
              .select('status')
              .where('id', '=', sent.request_id)
              .executeTakeFirst()
          )?.status === 'completed',
        30_000,
        'request completed',
      )
    }
    await page.goto(`${server.url}/network`)
    await page.getByRole('heading', { name: 'Network Status' }).waitFor()
    const panel = page.getByRole('tabpanel')
    await panel.locator('path.recharts-rectangle').first().waitFor({ timeout: 15_000 })
    expect(await panel.locator('path.recharts-rectangle').count()).toBeGreaterThan(0)
    await page
      .getByRole('cell', { name: /E2E Box/ })
      .first()
      .waitFor()
    const metrics = panel.locator('..')
    await screenshot(page, 'network-requests-chart', metrics)
    await page.getByRole('tab', { name: 'Performance Metrics' }).click()
    // One curve per series; a bucket with completed requests gives each a drawn point.
    const curves = panel.locator('path.recharts-line-curve')
    await curves.first().waitFor({ state: 'attached' })
    expect(await curves.count()).toBe(2)
    for (const d of await curves.evaluateAll((paths) =>
      paths.map((p) => p.getAttribute('d') ?? ''),
    )) {
      expect(d).toMatch(/^M\d/)
    }
    await screenshot(page, 'network-performance-chart', metrics)
    await page.getByRole('tab', { name: 'Job Queue' }).click()
    await panel.locator('.recharts-legend-item', { hasText: 'Acknowledged Jobs' }).waitFor()
    await panel.locator('path.recharts-rectangle').first().waitFor()
    await screenshot(page, 'network-job-queue-chart', metrics)
  })

  it('renames and deletes a conversation', async () => {
    await page.goto(`${server.url}/chat`)
    const sidebar = page.getByRole('complementary', { name: 'Conversations' })
    const item = sidebar.getByRole('listitem').first()
    await item.hover()
    await item.getByRole('button', { name: /^Rename / }).click()
    const input = sidebar.getByRole('textbox', { name: 'Conversation title' })
    await input.fill('Dog stories')
    await input.press('Enter')
    await sidebar.getByText('Dog stories').waitFor()
    // The header title saves in title case.
    await sidebar.getByRole('button', { name: /^Dog stories/ }).click()
    await page.waitForURL(/\/chat\?c=/)
    await page.getByRole('button', { name: 'Dog stories', exact: true }).click()
    const header = page.getByRole('textbox', { name: 'Conversation title' })
    await header.fill('tales about a little dog')
    await header.press('Enter')
    await sidebar.getByText('Tales About A Little Dog').waitFor()
    const conv = await server.core.database.db
      .selectFrom('conversations')
      .select(['id', 'title'])
      .where('user', '=', owner.id)
      .executeTakeFirstOrThrow()
    expect(conv.title).toBe('Tales About A Little Dog')
    await screenshot(page, 'chat-renamed')

    await item.hover()
    await item.getByRole('button', { name: 'Delete Tales About A Little Dog' }).click()
    // An in-app dialog with the spec's question (no native confirm box).
    const confirm = page.getByRole('alertdialog')
    await confirm.getByText('Are you sure you want to delete this conversation?').waitFor()
    await confirm.getByRole('button', { name: 'Delete' }).click()
    await sidebar.getByText('No conversations yet').waitFor()
    expect(dialogs).not.toContain('Are you sure you want to delete this conversation?')
    const left = await server.core.database.db
      .selectFrom('conversations')
      .select('id')
      .where('user', '=', owner.id)
      .execute()
    expect(left).toEqual([])
    await screenshot(page, 'chat-deleted')
  })
})
