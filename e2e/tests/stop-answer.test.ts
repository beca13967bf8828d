/**
 * Stop generating in a real browser (issue 10): a streamed chat answer from a real node (llama.cpp
 * on stories260K) shows a Stop button; Stop ends it where it is. The stopped answer keeps its
 * text, says Stopped and shows its cost (what was charged: the tokens so far); it stays ended after
 * a reload (no Thinking..., no Retry). The node's engine holds its answer after a few pieces
 * (packages/server/test/support/holding-engine.ts), so the click lands mid-answer every time.
 * Captured at 1280 and 390 px, light and dark, with axe.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import {
  holdingEngine,
  type HoldingControl,
} from '../../packages/server/test/support/holding-engine.ts'
import { launchBrowser } from '../harness/browser.ts'
import { captureAll, DESKTOP } from '../harness/capture.ts'
import {
  api,
  createUser,
  modelId,
  openAs,
  startCoordinator,
  waitUntil,
  type Coordinator,
  type TestUser,
} from '../harness/coordinator.ts'
import { linkNodeByApi, runAgent, serveModel, type NodeAgent } from '../harness/node-agent.ts'

describe('Stop during a streamed answer', () => {
  let server: Coordinator
  let browser: Browser
  let page: Page
  let owner: TestUser
  let node: NodeAgent
  let hold: HoldingControl
  let stories: string
  const cancelledJobs: string[] = []

  beforeAll(async () => {
    server = await startCoordinator()
    browser = await launchBrowser()
    owner = await createUser(server, 'stopper')
    // Someone else's node: answers from one's own node are free.
    const provider = await createUser(server, 'provider')
    const linked = await linkNodeByApi(server, provider, 'Stop Box')
    const held = holdingEngine()
    hold = held.control
    node = await runAgent(server, linked, { engine: held.engine })
    node.agent.events.on('job', (e) => {
      if (e.kind === 'cancelled') cancelledJobs.push(e.jobId)
    })
    stories = await modelId(server)
    await serveModel(server, provider, linked.nodeId, stories)
    const context = await browser.newContext({ viewport: DESKTOP })
    page = await context.newPage()
  })
  afterAll(async () => {
    await node?.stop()
    await browser?.close()
    await server?.stop()
  })

  const log = () => page.getByRole('log', { name: 'Messages' })
  const stopButton = () => page.getByRole('button', { name: 'Stop generating' })
  const sidebar = () => page.getByRole('complementary', { name: 'Conversations' })
  const closeSidebar = async () => {
    const close = sidebar().getByRole('button', { name: 'Close sidebar' })
    if (await close.isVisible()) await close.click()
  }
  const openSidebar = async (p: Page) => {
    const toggle = p.getByRole('button', { name: 'Open sidebar' })
    if (await toggle.isVisible()) await toggle.click()
  }
  const chatOnly = { phone: closeSidebar, desktop: openSidebar }

  it('stops the answer where it is: text kept, Stopped, its cost; ended after a reload', async () => {
    const conversation = await api<{ id: string }>(
      server,
      'POST',
      '/api/collections/conversations/records',
      { model: stories, title: 'Stop me' },
      owner.token,
    )
    await openAs(page, server, owner, `/chat?c=${conversation.id}`)
    // The partial text exists only as live events (it is not stored until the answer ends), and
    // the held answer sends no more after its first pieces: send once the page listens.
    await page.locator('section[aria-label="Chat"][data-realtime="live"]').waitFor()
    const db = server.core.database.db
    const balanceRow = () =>
      db
        .selectFrom('user_balances')
        .selectAll()
        .where('user', '=', owner.id)
        .executeTakeFirstOrThrow()
    const before = Number((await balanceRow()).balance)
    const prompt = 'Once upon a time there was a little dog named Max.'
    hold.next = { prompt, after: 6 }
    await page.getByRole('textbox', { name: 'Message' }).fill(prompt)
    await page.getByRole('textbox', { name: 'Message' }).press('Enter')

    // Streaming: part of the answer is on screen, and Stop is offered.
    await stopButton().waitFor({ timeout: 30_000 })
    const request = await waitUntil(
      () =>
        db
          .selectFrom('requests')
          .selectAll()
          .where('conversation', '=', conversation.id)
          .executeTakeFirst(),
      10_000,
      'the request',
    )
    await waitUntil(() => hold.runs[0]?.forwarded, 30_000, 'the node wrote part of the answer')
    const firstWords = hold.runs[0].forwarded.trim().split(/\s+/)[0]
    await log().getByText(firstWords, { exact: false }).first().waitFor({ timeout: 30_000 })
    expect(await captureAll(page, 'chat-stop-while-streaming', chatOnly)).toEqual([])

    await stopButton().click()
    await log().getByText('Stopped', { exact: true }).waitFor({ timeout: 30_000 })
    const costLine = log().getByText(/^Cost: \d+ tokens$/)
    await costLine.waitFor()
    await stopButton().waitFor({ state: 'detached' })

    const row = await db
      .selectFrom('requests')
      .selectAll()
      .where('id', '=', request.id)
      .executeTakeFirstOrThrow()
    expect(row.status).toBe('cancelled')
    const response = String(row.response)
    expect(response.length).toBeGreaterThan(0)
    expect(hold.runs[0].forwarded.startsWith(response)).toBe(true)
    const tokens = Number(row.tokens_input) + Number(row.tokens_output)
    expect(await costLine.textContent()).toBe(`Cost: ${tokens} tokens`)
    // Multiplier 1: the credits charged are the tokens produced so far, and nothing stays held.
    expect(Number(row.cost) / 1000).toBe(tokens)
    const balance = await balanceRow()
    expect(Number(balance.held)).toBe(0)
    expect(Number(balance.balance)).toBe(before - Number(row.cost))
    const job = await db
      .selectFrom('node_jobs')
      .select('id')
      .where('request', '=', request.id)
      .executeTakeFirstOrThrow()
    await waitUntil(() => cancelledJobs.includes(String(job.id)), 10_000, 'the node stopped')
    const bubbleText = await log().innerText()
    expect(bubbleText).toContain(response.trim().split(/\s+/).slice(0, 3).join(' '))
    expect(await captureAll(page, 'chat-stopped-answer', chatOnly)).toEqual([])

    // Ended for good: after a reload no Thinking..., no Retry, no Stop; the text and cost stay.
    await page.reload()
    await log().getByText('Stopped', { exact: true }).waitFor({ timeout: 30_000 })
    await log().getByText(`Cost: ${tokens} tokens`).waitFor()
    expect(await log().getByText('Thinking...').count()).toBe(0)
    expect(await page.getByRole('button', { name: /Retry/ }).count()).toBe(0)
    expect(await stopButton().count()).toBe(0)
  })
})
