/**
 * Chat that behaves like the chats people know (issue 9 item 4), in Chromium against a real
 * coordinator and a real node (llama.cpp on stories260K). Every state is captured at 1280 and
 * 390 px, light and dark, and checked with axe.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { toUnits } from '../../packages/server/src/core/ledger/credits.ts'
import { applyEntry } from '../../packages/server/src/core/ledger/ledger-entry.ts'
import { withUnitOfWork } from '../../packages/server/src/core/records/unit-of-work.ts'
import { launchBrowser } from '../harness/browser.ts'
import { captureAll, DESKTOP } from '../harness/capture.ts'
import {
  api,
  ApiCallError,
  createAsServer,
  createUser,
  modelId,
  openAs,
  seedConversation,
  startCoordinator,
  waitUntil,
  type Coordinator,
  type TestUser,
} from '../harness/coordinator.ts'
import { linkNodeByApi, runAgent, serveModel, type NodeAgent } from '../harness/node-agent.ts'

const UNREACHABLE = 'Cannot reach the Meshwork server. Check your connection and try again.'

describe('chat as people know it', () => {
  let server: Coordinator
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let owner: TestUser
  let node: NodeAgent
  let stories: string
  let tiny: string
  const nativeDialogs: string[] = []

  beforeAll(async () => {
    server = await startCoordinator()
    browser = await launchBrowser()
    owner = await createUser(server, 'chatux')
    // Someone else's node: answers from one's own node are free (no credits would be charged).
    const provider = await createUser(server, 'provider')
    const linked = await linkNodeByApi(server, provider, 'Chat Box')
    node = await runAgent(server, linked)
    stories = await modelId(server)
    tiny = await modelId(server, 'llama-2-tiny-random')
    await serveModel(server, provider, linked.nodeId, stories)
    // A 1.5x model, as in the issue ('Cost: 318 tokens' when 477 credits were charged).
    await db()
      .updateTable('models')
      .set({ credit_multiplier: toUnits(1.5) })
      .where('id', '=', stories)
      .execute()
    // Enough for every answer below (each send holds up to 256 output tokens' worth).
    await setBalance(100_000)
    context = await browser.newContext({ viewport: DESKTOP })
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url })
    page = await context.newPage()
    page.on('dialog', (d) => {
      nativeDialogs.push(d.message())
      void d.dismiss()
    })
    await openAs(page, server, owner, '/chat')
  })
  afterAll(async () => {
    await node?.stop()
    await browser?.close()
    await server?.stop()
  })

  const db = () => server.core.database.db
  /** Moves the owner's balance to `target` credits through the ledger (an admin credit or debit). */
  const setBalance = (target: number) =>
    withUnitOfWork(server.core, async (uow) => {
      const row = await uow.trx
        .selectFrom('user_balances')
        .select('balance')
        .where('user', '=', owner.id)
        .executeTakeFirstOrThrow()
      // The ledger counts thousandths of a credit.
      const delta = toUnits(target) - Number(row.balance)
      if (delta === 0) return
      await applyEntry(uow, {
        user: owner.id,
        type: delta > 0 ? 'credit_admin' : 'debit_admin',
        amount: Math.abs(delta),
        description: 'Test balance',
      })
    })
  const sidebar = (p = page) => p.getByRole('complementary', { name: 'Conversations' })
  const log = (p = page) => p.getByRole('log', { name: 'Messages' })
  const composer = (p = page) => p.getByRole('textbox', { name: 'Message' })
  const conversation = (title: string, model = stories) =>
    api<{ id: string }>(
      server,
      'POST',
      '/api/collections/conversations/records',
      { model, title },
      owner.token,
    )
  const requestsOf = (conversationId: string) =>
    db()
      .selectFrom('requests')
      .selectAll()
      .where('conversation', '=', conversationId)
      .orderBy('created')
      .execute()
  const completed = (conversationId: string, count: number) =>
    waitUntil(
      async () => {
        const rows = await requestsOf(conversationId)
        return rows.filter((r) => r.status === 'completed').length >= count && rows
      },
      60_000,
      `${count} completed answers`,
    )
  /** The chat panel when the sidebar overlays it on a phone: close the sidebar. */
  const closeSidebar = async (p: Page) => {
    // On a phone the sidebar covers the header's toggle: use its own close button.
    const close = sidebar(p).getByRole('button', { name: 'Close sidebar' })
    if (await close.isVisible()) await close.click()
  }
  const openSidebar = async (p: Page) => {
    const toggle = p.getByRole('button', { name: 'Open sidebar' })
    if (await toggle.isVisible()) await toggle.click()
    await sidebar(p).waitFor()
  }
  const chatOnly = { phone: closeSidebar, desktop: openSidebar }
  const clipboard = () => page.evaluate(() => navigator.clipboard.readText())
  /** Distance of the message list's view from its bottom, in px. */
  const distanceFromBottom = () =>
    log().evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight)

  it('puts a new chat on top of month-old ones, past 50 of them, and titles it from its first message', async () => {
    const monthAgo = new Date(Date.now() - 30 * 86_400_000).toISOString().replace('T', ' ')
    for (let i = 0; i < 55; i++) {
      const c = await conversation(`Old chat ${i}`)
      await db()
        .updateTable('conversations')
        .set({ last_message_at: monthAgo, created: monthAgo })
        .where('id', '=', c.id)
        .execute()
    }
    await page.goto(`${server.url}/chat`)
    await sidebar().getByText('Old chat', { exact: false }).first().waitFor()
    await sidebar().getByRole('button', { name: 'New chat' }).click()
    await page.waitForURL(/\/chat\?c=/)
    const top = sidebar().getByRole('listitem').first()
    await top.getByText('New Chat').waitFor()
    expect(await top.getByText('Today').count()).toBe(1)

    await composer().fill('Tell me about a brave little fox')
    await composer().press('Enter')
    await top.getByText('Tell me about a brave little fox').waitFor({ timeout: 30_000 })
    await log()
      .getByText(/^Cost: \d+ tokens$/)
      .waitFor({ timeout: 60_000 })
    await page
      .getByRole('button', { name: 'Tell me about a brave little fox', exact: true })
      .waitFor()
    const problems = await captureAll(page, 'chat-new-on-top', {
      phone: openSidebar,
      desktop: openSidebar,
    })
    expect(problems).toEqual([])
  })

  it("shows the server's reason in the sign-up box", async () => {
    const anon = await browser.newPage({ viewport: DESKTOP })
    try {
      await anon.goto(`${server.url}/login`)
      await anon.getByRole('button', { name: "Don't have an account? Create one" }).click()
      await anon.getByLabel('Email').fill(`short${Date.now()}@example.com`)
      await anon.getByLabel('Password').fill('short')
      await anon.getByRole('button', { name: 'Create account' }).click()
      const box = anon.getByRole('alert')
      await box.getByText('Password: Must be at least 8 character(s).').waitFor()
      expect(await captureAll(anon, 'signup-short-password')).toEqual([])
      await anon.getByLabel('Email').fill(owner.email)
      await anon.getByLabel('Password').fill('password123')
      await anon.getByRole('button', { name: 'Create account' }).click()
      await box.getByText('Email: Value must be unique.').waitFor()
      expect(await box.innerText()).not.toContain('Failed to create record.')
      expect(await captureAll(anon, 'signup-taken-email')).toEqual([])
      // The server cannot be reached: words people understand, not 'Failed to fetch'.
      await anon.route('**/api/collections/users/**', (route) => route.abort('connectionrefused'))
      await anon.getByRole('button', { name: 'Already have an account? Sign in' }).click()
      await anon.getByLabel('Email').fill(owner.email)
      await anon.getByLabel('Password').fill(owner.password)
      await anon.getByRole('button', { name: 'Sign in' }).click()
      await box.getByText(UNREACHABLE).waitFor()
      expect(await box.innerText()).not.toContain('Failed to fetch')
      expect(await captureAll(anon, 'signin-unreachable')).toEqual([])
    } finally {
      await anon.close()
    }
  })

  it('saves the temperature with each conversation', async () => {
    const warm = await conversation('Warm Chat')
    const cool = await conversation('Cool Chat')
    const settings = async () => {
      await page.getByRole('button', { name: 'Chat settings' }).click()
      const dialog = page.getByRole('dialog', { name: 'Chat Settings' })
      await dialog.waitFor()
      return dialog
    }
    await page.goto(`${server.url}/chat?c=${warm.id}`)
    let dialog = await settings()
    await dialog.getByText('0.7', { exact: true }).waitFor()
    const slider = dialog.getByRole('slider', { name: 'Temperature' })
    await slider.focus()
    // The slider shows the saved value: one step at a time, each after the last one shows.
    for (const value of ['0.8', '0.9', '1.0', '1.1', '1.2']) {
      await slider.press('ArrowRight')
      await dialog.getByText(value, { exact: true }).waitFor()
    }
    await waitUntil(
      async () =>
        (
          await db()
            .selectFrom('conversations')
            .select('temperature')
            .where('id', '=', warm.id)
            .executeTakeFirst()
        )?.temperature === 1.2,
      10_000,
      'temperature saved',
    )
    expect(await captureAll(page, 'chat-settings-temperature')).toEqual([])
    await dialog.getByRole('button', { name: 'Done' }).click()

    await page.goto(`${server.url}/chat?c=${cool.id}`)
    dialog = await settings()
    await dialog.getByText('0.7', { exact: true }).waitFor()
    await page.keyboard.press('Escape')
    await page.goto(`${server.url}/chat?c=${warm.id}`)
    dialog = await settings()
    await dialog.getByText('1.2', { exact: true }).waitFor()
    await page.keyboard.press('Escape')
    await composer().fill('Once upon a time')
    await composer().press('Enter')
    const [sent] = await completed(warm.id, 1)
    expect(sent.temperature).toBe(1.2)
  })

  it('keeps the composer text when a send fails, in words people understand', async () => {
    const c = await conversation('Failing Chat')
    await page.goto(`${server.url}/chat?c=${c.id}`)
    await composer().waitFor()
    // The coordinator cannot be reached: the browser gets no answer at all.
    await page.route('**/api/chat/send', (route) => route.abort('connectionrefused'))
    await composer().fill('This will not get through')
    await composer().press('Enter')
    await log().getByRole('alert').getByText(`Error: ${UNREACHABLE}`).waitFor()
    expect(await composer().inputValue()).toBe('This will not get through')
    expect(await captureAll(page, 'chat-send-unreachable', chatOnly)).toEqual([])
    await page.unroute('**/api/chat/send')

    // The server refuses (not enough credits): its reason, and the text is still there.
    await setBalance(10)
    try {
      const prompt = 'A question that costs more than ten credits'
      const quote = await api<{ min_cost: number; max_cost: number | null }>(
        server,
        'POST',
        '/api/chat/quote',
        { conversation_id: c.id, model_id: stories, prompt },
        owner.token,
      )
      expect(quote.max_cost).toBeNull()
      const refusal = await api(
        server,
        'POST',
        '/api/chat/send',
        { conversation_id: c.id, model_id: stories, prompt },
        owner.token,
      ).then(
        () => '',
        (err: ApiCallError) => (err.body as { message: string }).message,
      )
      expect(refusal).not.toBe('')
      await page.reload()
      await page.getByText('Tokens available: 10', { exact: true }).waitFor()
      await composer().fill(prompt)
      await page
        .getByText(`Not enough credits: at least ${Math.ceil(quote.min_cost)} needed`)
        .waitFor()
      await composer().press('Enter')
      await log().getByText(`Error: ${refusal}`).waitFor()
      expect(await composer().inputValue()).toBe(prompt)
      expect(await captureAll(page, 'chat-send-refused', chatOnly)).toEqual([])
    } finally {
      await setBalance(100_000)
    }
  })

  it('sends a message again after its answer was lost, and it is run and charged once', async () => {
    const c = await conversation('Lost Answer Chat')
    await page.goto(`${server.url}/chat?c=${c.id}`)
    await composer().waitFor()
    // The send reaches the coordinator and is stored; its answer is lost on the way back, as a
    // proxy answers when the coordinator behind it dies at that moment.
    let sends = 0
    await page.route('**/api/chat/send', async (route) => {
      if (sends++ > 0) return route.fallback()
      await route.fetch()
      await route.fulfill({ status: 503, contentType: 'text/html', body: '<h1>503</h1>' })
    })
    const prompt = 'Tell me about a letter that got lost'
    await composer().fill(prompt)
    await composer().press('Enter')
    await waitUntil(async () => (await composer().inputValue()) === prompt, 10_000, 'text back')
    // Not knowing that it landed, the user sends it again.
    await composer().press('Enter')
    await waitUntil(async () => sends === 2, 10_000, 'sent again')
    const [answer] = await completed(c.id, 1)
    await log()
      .getByText(/^Cost: \d+ tokens$/)
      .waitFor({ timeout: 60_000 })
    expect(await requestsOf(c.id)).toHaveLength(1)
    expect(await log().getByRole('alert').count()).toBe(0)
    expect(await log().getByText(prompt, { exact: true }).count()).toBe(1)
    const debits = await db()
      .selectFrom('user_credit_txs')
      .select('id')
      .where('request', '=', answer.id)
      .where('type', '=', 'debit_inference_request')
      .execute()
    expect(debits).toHaveLength(1)
    expect(await captureAll(page, 'chat-send-lost-answer', chatOnly)).toEqual([])
    await page.unroute('**/api/chat/send')
  })

  it('gives a balance that pays only for a shorter answer a shorter one, and says so before sending', async () => {
    const c = await conversation('Frugal Chat')
    const prompt = 'Once upon a time there was a frog'
    type Quote = { estimated_input: number; output_cap: number; max_output: number }
    const ask = () =>
      api<Quote>(
        server,
        'POST',
        '/api/chat/quote',
        { conversation_id: c.id, model_id: stories, prompt },
        owner.token,
      )
    const full = await ask()
    expect(full.output_cap).toBe(full.max_output)
    // What the prompt and 40 answer tokens cost at 1.5 credits a token.
    const target = (full.estimated_input + 40) * 1.5
    await setBalance(target)
    try {
      expect(await ask()).toMatchObject({ output_cap: 40 })
      await page.goto(`${server.url}/chat?c=${c.id}`)
      await composer().fill(prompt)
      await page.getByText('Your balance pays for a shorter answer: up to 40 tokens').waitFor()
      expect(await captureAll(page, 'chat-shorter-answer', chatOnly)).toEqual([])
      // The hold the send takes, as the request row carries it while the answer is made.
      const holds: number[] = []
      const off = server.core.events.on((change) => {
        if (change.collection.name === 'requests' && change.row.conversation === c.id)
          holds.push(Number(change.row.reserved))
      })
      await composer().press('Enter')
      const [request] = await completed(c.id, 1).finally(off)
      // Accepted, not refused: the hold was what the balance pays for, the answer within it.
      expect(Math.max(...holds)).toBe(toUnits(target))
      expect(Number(request.tokens_output)).toBeGreaterThan(0)
      expect(Number(request.tokens_output)).toBeLessThanOrEqual(40)
      await log()
        .getByText(/^Cost: \d+ tokens$/)
        .waitFor({ timeout: 60_000 })
    } finally {
      await setBalance(100_000)
    }
  })

  it('shows what an answer cost in tokens, and before sending the most a message can cost', async () => {
    const c = await conversation('Costed Chat')
    await page.goto(`${server.url}/chat?c=${c.id}`)
    const prompt = 'Once upon a time there was a cat'
    await composer().fill(prompt)
    const quote = await api<{ max_cost: number }>(
      server,
      'POST',
      '/api/chat/quote',
      { conversation_id: c.id, model_id: stories, prompt },
      owner.token,
    )
    await page
      .getByText(`· at most ${quote.max_cost.toLocaleString('en-US')} credits for this message`)
      .waitFor()
    expect(await captureAll(page, 'chat-max-cost', chatOnly)).toEqual([])
    await composer().press('Enter')
    const cost = log().getByText(/^Cost: \d+ tokens$/)
    await cost.waitFor({ timeout: 60_000 })
    const [request] = await completed(c.id, 1)
    const tokens = Number(request.tokens_input) + Number(request.tokens_output)
    expect(await cost.textContent()).toBe(`Cost: ${tokens} tokens`)
    // Beside the tokens, the credits actually charged: the record's cost, the ledger's debit.
    const record = await api<{ cost: number }>(
      server,
      'GET',
      `/api/collections/requests/records/${request.id}`,
      undefined,
      owner.token,
    )
    expect(record.cost).toBe(tokens * 1.5)
    const debit = await db()
      .selectFrom('user_credit_txs')
      .select('amount')
      .where('request', '=', request.id as string)
      .where('type', '=', 'debit_inference_request')
      .executeTakeFirstOrThrow()
    expect(Number(debit.amount)).toBe(toUnits(record.cost))
    await log()
      .getByText(
        `· ${record.cost.toLocaleString('en-US', { maximumFractionDigits: 2 })} credits charged`,
        { exact: true },
      )
      .waitFor()
    // Following the stream: the finished answer sits at the bottom of the view.
    expect(await distanceFromBottom()).toBeLessThanOrEqual(100)
    expect(await captureAll(page, 'chat-answer-cost', chatOnly)).toEqual([])
  })

  it('regenerates the last answer in place', async () => {
    const c = await db()
      .selectFrom('conversations')
      .select('id')
      .where('title', '=', 'Costed Chat')
      .executeTakeFirstOrThrow()
    const [before] = await requestsOf(c.id as string)
    await page.getByRole('button', { name: 'Regenerate answer' }).click()
    const rows = await waitUntil(
      async () => {
        const all = await requestsOf(c.id as string)
        return all.length === 2 && all[1].status === 'completed' && all
      },
      60_000,
      'regenerated answer',
    )
    expect(rows[0]).toMatchObject({ id: before.id, replaced_by: rows[1].id })
    expect(rows[1].prompt).toBe(before.prompt)
    await log()
      .getByText(/^Cost: \d+ tokens$/)
      .waitFor({ timeout: 60_000 })
    // One exchange on screen: the new answer took the old one's place.
    await waitUntil(
      async () => (await log().locator('[data-role="user-message"]').count()) === 1,
      10_000,
      'one message',
    )
    const shown = (await log().locator('.markdown').last().innerText()).replace(/\s+/g, ' ')
    const words = String(rows[1].response)
      .replace(/\s+/g, ' ')
      .trim()
      .split(' ')
      .slice(0, 3)
      .join(' ')
    expect(shown).toContain(words)
    expect(await captureAll(page, 'chat-regenerated', chatOnly)).toEqual([])
  })

  it('never fetches images from other hosts, and copies messages and code', async () => {
    let hits = 0
    const tracker: Server = createServer((_req, res) => {
      hits++
      res.end('')
    })
    await new Promise<void>((r) => tracker.listen(0, '127.0.0.1', r))
    const port = (tracker.address() as AddressInfo).port
    try {
      const c = await conversation('Pictures And Code')
      const response = [
        `Here is a cat: ![a sleepy cat](http://127.0.0.1:${port}/cat.png?reader=1)`,
        '',
        '```js',
        'const answer = 42',
        '```',
      ].join('\n')
      await createAsServer(server, 'requests', {
        user: owner.id,
        conversation: c.id,
        model: stories,
        prompt: 'Show me a cat and some code',
        response,
        status: 'completed',
        tokens_input: 7,
        tokens_output: 30,
        is_partial: false,
      })
      const asked: string[] = []
      page.on('request', (r) => asked.push(r.url()))
      await page.goto(`${server.url}/chat?c=${c.id}`)
      const link = log().getByRole('link', { name: /a sleepy cat/ })
      await link.waitFor()
      expect(await link.getAttribute('href')).toBe(`http://127.0.0.1:${port}/cat.png?reader=1`)
      expect(await log().locator('img').count()).toBe(0)
      // Code is highlighted once the browser is idle.
      await log().locator('.code-block code span.hljs-keyword').first().waitFor()
      await log().getByRole('button', { name: 'Copy code' }).click()
      expect(await clipboard()).toBe('const answer = 42')
      await log().getByRole('button', { name: 'Copy answer' }).click()
      expect(await clipboard()).toBe(response)
      const user = log().locator('[data-role="user-message"]')
      await user.hover()
      await user.getByRole('button', { name: 'Copy message' }).click()
      expect(await clipboard()).toBe('Show me a cat and some code')
      await user.getByRole('button', { name: 'Copied' }).waitFor()
      expect(await captureAll(page, 'chat-image-link-and-code', chatOnly)).toEqual([])
      expect(hits).toBe(0)
      expect(asked.filter((u) => u.includes(`:${port}`))).toEqual([])
    } finally {
      tracker.close()
    }
  })

  it('uses in-app dialogs and toasts with the spec texts, never native boxes', async () => {
    await page.goto(`${server.url}/chat`)
    await composer().fill('hello there')
    await composer().press('Enter')
    await page
      .getByText('Please select a conversation or create a new one first.', { exact: true })
      .waitFor()
    expect(await composer().inputValue()).toBe('hello there')
    expect(await captureAll(page, 'chat-toast-no-conversation')).toEqual([])
    await composer().fill('')

    // A failed request on a model no node serves: Retry is refused, the toast says why.
    const c = await conversation('Broken Chat', tiny)
    await createAsServer(server, 'requests', {
      user: owner.id,
      conversation: c.id,
      model: tiny,
      prompt: 'Say something random',
      status: 'failed',
      error_message: 'The node stopped answering',
      can_retry: true,
      is_partial: false,
    })
    await page.goto(`${server.url}/chat?c=${c.id}`)
    await log().getByText('Request Failed').waitFor()
    // The banner says what is wrong: a node is online, but none serves this model.
    const banner = page.getByRole('alert').filter({ hasText: 'Model Unavailable' })
    await banner
      .getByText(/1 node is online, but none is serving Llama 2 Tiny \(random\)/)
      .waitFor()
    await log().getByRole('button', { name: 'Retry' }).click()
    await page
      .getByText(
        'Retry failed: Llama 2 Tiny (random) is currently unavailable. No nodes are online for this model. Please select a different model or try again later.',
        { exact: true },
      )
      .waitFor()
    expect(await captureAll(page, 'chat-retry-failed-toast', chatOnly)).toEqual([])

    await openSidebar(page)
    const item = sidebar().getByRole('listitem').filter({ hasText: 'Broken Chat' })
    await item.hover()
    await item.getByRole('button', { name: 'Delete Broken Chat' }).click()
    const confirm = page.getByRole('alertdialog')
    await confirm.getByText('Are you sure you want to delete this conversation?').waitFor()
    expect(await captureAll(page, 'chat-delete-confirm')).toEqual([])
    await confirm.getByRole('button', { name: 'Cancel' }).click()
    expect(
      await db().selectFrom('conversations').select('id').where('id', '=', c.id).executeTakeFirst(),
    ).toBeDefined()
    await item.hover()
    await item.getByRole('button', { name: 'Delete Broken Chat' }).click()
    await page.getByRole('alertdialog').getByRole('button', { name: 'Delete' }).click()
    await waitUntil(
      async () =>
        !(await db()
          .selectFrom('conversations')
          .select('id')
          .where('id', '=', c.id)
          .executeTakeFirst()),
      10_000,
      'conversation deleted',
    )
    await page.getByText('Welcome to Meshwork!').waitFor()
    expect(nativeDialogs).toEqual([])
  })

  it('keeps conversations and messages in step across tabs', async () => {
    // Titled 'New Chat', so that its first message names it (in both tabs).
    const c = await conversation('New Chat')
    const other = await context.newPage()
    try {
      await page.goto(`${server.url}/chat?c=${c.id}`)
      await other.goto(`${server.url}/chat?c=${c.id}`)
      await other.getByRole('button', { name: 'Account menu' }).waitFor()
      await composer().fill('Hello from the first tab')
      await composer().press('Enter')
      await log(other).getByText('Hello from the first tab').waitFor({ timeout: 30_000 })
      await log(other)
        .getByText(/^Cost: \d+ tokens$/)
        .waitFor({ timeout: 60_000 })
      const [row] = await completed(c.id, 1)
      const words = String(row.response)
        .replace(/\s+/g, ' ')
        .trim()
        .split(' ')
        .slice(0, 3)
        .join(' ')
      expect(
        (await log(other).locator('.markdown').last().innerText()).replace(/\s+/g, ' '),
      ).toContain(words)
      // The title the first message gave shows in the other tab too.
      await sidebar(other).getByText('Hello from the first tab').waitFor()

      await sidebar().getByRole('button', { name: 'New chat' }).click()
      await page.waitForURL((u) => u.searchParams.get('c') !== c.id)
      const fresh = new URL(page.url()).searchParams.get('c')!
      await sidebar(other).getByRole('listitem').first().getByText('New Chat').waitFor()

      const item = sidebar(other).getByRole('listitem').first()
      await item.hover()
      await item.getByRole('button', { name: /^Rename / }).click()
      const input = sidebar(other).getByRole('textbox', { name: 'Conversation title' })
      await input.fill('Renamed Elsewhere')
      await input.press('Enter')
      await page.getByRole('button', { name: 'Renamed Elsewhere', exact: true }).waitFor()

      await item.hover()
      await sidebar(other).getByRole('button', { name: 'Delete Renamed Elsewhere' }).click()
      await other.getByRole('alertdialog').getByRole('button', { name: 'Delete' }).click()
      // The tab that had it open goes back to the welcome screen.
      await page.getByText('Welcome to Meshwork!').waitFor()
      expect(await sidebar().getByText('Renamed Elsewhere').count()).toBe(0)
      expect(fresh).toBeTruthy()
      await other.goto(`${server.url}/chat?c=${c.id}`)
      await log(other)
        .getByText(/^Cost: \d+ tokens$/)
        .waitFor()
      expect(await captureAll(other, 'chat-other-tab', chatOnly)).toEqual([])
    } finally {
      await other.close()
    }
  })

  it('scrolls through a 200-request history, rendering only what can be seen', async () => {
    const id = await seedConversation(server, owner, 200, 'Long History')
    await page.goto(`${server.url}/chat?c=${id}`)
    const newest = log().getByText('Reply number 200:', { exact: false })
    await newest.waitFor()
    const rendered = () => log().locator('[data-role="user-message"]').count()
    expect(await rendered()).toBeLessThan(20)
    expect(await distanceFromBottom()).toBeLessThanOrEqual(1)
    expect(await captureAll(page, 'chat-long-history', chatOnly)).toEqual([])
    // Up to the very first message: older pages load on the way, the reader's place is kept.
    const first = log().getByText('Question number 1', { exact: true })
    await log().hover()
    await waitUntil(
      async () => {
        await page.mouse.wheel(0, -3000)
        return (await first.count()) > 0
      },
      60_000,
      'the first message',
    )
    const order = await log()
      .locator('[data-role="user-message"]')
      .allInnerTexts()
      .then((t) => t.map((s) => Number(/\d+/.exec(s)?.[0])))
    expect(order.slice(0, 3)).toEqual([1, 2, 3])
    expect(await rendered()).toBeLessThan(20)
    expect(await captureAll(page, 'chat-long-history-top', chatOnly)).toEqual([])
    await log().focus()
    await page.keyboard.press('End')
    await newest.waitFor()
  })

  it('follows a streaming answer, stops following when the reader scrolls away, and follows again on send', async () => {
    const id = await seedConversation(server, owner, 12, 'Scrolling Chat')
    await page.goto(`${server.url}/chat?c=${id}`)
    await log().getByText('Reply number 12:', { exact: false }).waitFor()
    await composer().fill('Once upon a time there was a dragon')
    await composer().press('Enter')
    const busy: Locator = log().locator('[aria-busy="true"]')
    await busy.first().waitFor({ timeout: 60_000 })
    // The reader scrolls up while it types: the view stays where they put it.
    await log().hover()
    await page.mouse.wheel(0, -1500)
    await log()
      .getByText(/^Cost: \d+ tokens$/)
      .last()
      .waitFor({ timeout: 60_000 })
    expect(await distanceFromBottom()).toBeGreaterThan(100)
    await composer().fill('And then?')
    await composer().press('Enter')
    await completed(id, 14)
    await waitUntil(
      async () =>
        (await log()
          .getByText(/^Cost: \d+ tokens$/)
          .count()) > 0 && (await busy.count()) === 0,
      60_000,
      'typing done',
    )
    // Following brings the view down to the new answer's end once its last line (the cost) is
    // laid out, which may be just after the answer stops being busy.
    await waitUntil(async () => (await distanceFromBottom()) <= 1, 5_000, 'at the bottom')
  })
})
