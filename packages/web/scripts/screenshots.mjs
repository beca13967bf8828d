// Dev aid: screenshots of the built app against a faked API (no coordinator needed).
// Usage: npm run build -w @meshwork/web && node packages/web/scripts/screenshots.mjs [outDir]
import { createServer } from 'node:http'
import { readFile } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { createRequire } from 'node:module'

const axeSource = await readFile(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
)
async function axe(page, label) {
  await page.addScriptTag({ content: axeSource })
  const result = await page.evaluate(
    async () => await globalThis.axe.run(document, { resultTypes: ['violations'] }),
  )
  for (const v of result.violations.filter(
    (v) => v.impact === 'serious' || v.impact === 'critical',
  )) {
    console.log(
      `axe ${label}: ${v.impact} ${v.id}: ${v.help} -> ${v.nodes
        .slice(0, 3)
        .map((n) => n.target.join(' '))
        .join(' | ')}`,
    )
  }
}

const dist = fileURLToPath(new URL('../dist/', import.meta.url))
const outDir = process.argv[2] ?? '/tmp/shots'
const types = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
}

// A real SSE stream for /api/realtime, so the streaming path runs end to end: once the client
// subscribes to the open conversation's requests (c3) and has sent, the reply grows word by word,
// then completes. Events go out under the subscription's own key, as the coordinator sends them.
const streamWords =
  'Once upon a time, a **tiny model** told a story about a mesh of friendly computers that shared their work.'.split(
    ' ',
  )
let sse = null
let streamKey = null
let sent = false
let streaming = false
function pushStream() {
  if (!streamKey || !sent || streaming) return
  streaming = true
  let i = 0
  const timer = setInterval(() => {
    i++
    const done = i >= streamWords.length
    const record = {
      id: 'r9',
      collectionName: 'requests',
      conversation: 'c3',
      prompt: 'hi',
      status: done ? 'completed' : 'processing',
      response: streamWords.slice(0, i).join(' '),
      is_partial: !done,
      tokens_input: 3,
      tokens_output: i,
      error_message: '',
      can_retry: false,
    }
    sse?.write(`event:${streamKey}\ndata:${JSON.stringify({ action: 'update', record })}\n\n`)
    if (done) {
      clearInterval(timer)
      streaming = false
      sent = false
    }
  }, 90)
}
const server = createServer(async (req, res) => {
  const path = new URL(req.url, 'http://x').pathname
  if (path === '/api/realtime' && req.method === 'GET') {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
    })
    res.write('id:cid1\nevent:PB_CONNECT\ndata:{"clientId":"cid1"}\n\n')
    sse = res
    return
  }
  if (path === '/api/realtime' && req.method === 'POST') {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      res.writeHead(204).end()
      const keys = JSON.parse(body || '{}').subscriptions ?? []
      streamKey = keys.find((k) => k.startsWith('requests/*') && k.includes('c3')) ?? streamKey
    })
    return
  }
  let file = join(dist, path)
  let body
  try {
    body = await readFile(file)
  } catch {
    file = join(dist, 'index.html')
    body = await readFile(file)
  }
  res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream' })
  res.end(body)
}).listen(0)
const base = `http://127.0.0.1:${server.address().port}`

const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url')
const token = `${b64({ alg: 'HS256' })}.${b64({ id: 'u1', exp: 4102444800, type: 'auth' })}.sig`
const user = {
  id: 'u1',
  collectionId: '_pb_users_auth_',
  collectionName: 'users',
  email: 'ada@example.com',
  name: 'ada',
  verified: true,
}
const ago = (h) => new Date(Date.now() - h * 3600e3).toISOString().replace('T', ' ')
const list = (items, page = 1, totalPages = 1) => ({
  page,
  perPage: 50,
  totalItems: items.length,
  totalPages,
  items,
})
const models = [
  {
    id: 'm1',
    name: 'stories260k',
    display_name: 'Stories 260K',
    description: 'A tiny story model for tests',
    credit_multiplier: 1,
    node_count: 2,
    sort_order: 1,
  },
  {
    id: 'm2',
    name: 'llama-3-8b',
    display_name: 'Llama 3 8B',
    description: '',
    credit_multiplier: 2.5,
    node_count: 1,
    sort_order: 2,
  },
  {
    id: 'm3',
    name: 'mixtral',
    display_name: 'Mixtral 8x7B',
    description: 'Mixture of experts',
    credit_multiplier: 4,
    node_count: 0,
    sort_order: 3,
  },
]
const convs = [
  {
    id: 'c1',
    user: 'u1',
    model: 'm1',
    title: 'Rust Borrow Checker Help',
    message_count: 2,
    last_message_at: ago(1),
    created: ago(2),
  },
  {
    id: 'c2',
    user: 'u1',
    model: 'm2',
    title: 'Trip ideas for Lisbon',
    message_count: 4,
    last_message_at: ago(30),
    created: ago(30),
  },
  {
    id: 'c3',
    user: 'u1',
    model: 'm1',
    title: 'New Chat',
    message_count: 0,
    last_message_at: '',
    created: ago(24 * 4),
  },
  {
    id: 'c4',
    user: 'u1',
    model: 'm1',
    title: 'Old notes',
    message_count: 1,
    last_message_at: ago(24 * 20),
    created: ago(24 * 20),
  },
]
const md =
  'Here is a **short** answer with code:\n\n```rust\nfn main() {\n    let s = String::from("hi");\n    println!("{}", s);\n}\n```\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script>[bad](javascript:alert(1))'
const reqs = [
  {
    id: 'r1',
    conversation: 'c1',
    prompt: 'How do I fix "borrowed value does not live long enough"?',
    model: 'm1',
    status: 'completed',
    response: md,
    tokens_input: 12,
    tokens_output: 80,
    error_message: '',
    can_retry: false,
    is_partial: false,
    created: ago(1),
  },
  {
    id: 'r2',
    conversation: 'c1',
    prompt: 'And with lifetimes?',
    model: 'm1',
    status: 'failed',
    response: '',
    tokens_input: 0,
    tokens_output: 0,
    error_message: 'No node could serve this request',
    can_retry: true,
    is_partial: false,
    created: ago(0.5),
  },
]
const txTypes = [
  'credit_admin',
  'debit_inference_request',
  'credit_inference_request',
  'debit_admin',
]
const txs = Array.from({ length: 50 }, (_, i) => ({
  id: `t${i}`,
  user: 'u1',
  type: txTypes[i % 4],
  amount: i % 4 === 0 ? 1000 : 7 + i,
  created: ago(i),
  expand: {
    request: { id: 'r1', expand: { model: { name: 'stories260k', display_name: 'Stories 260K' } } },
  },
}))

function api(route) {
  const url = new URL(route.request().url())
  const p = url.pathname
  const json = (body, status = 200) =>
    route.fulfill({ status, contentType: 'application/json', body: JSON.stringify(body) })
  if (p.endsWith('/auth-refresh')) return json({ token, record: user })
  if (p.endsWith('/auth-with-password'))
    return json({ message: 'Failed to authenticate.', status: 400, data: {} }, 400)
  if (p === '/api/realtime') return route.continue()
  if (p.includes('/conversations/records')) return json(list(globalThis.noConvs ? [] : convs))
  if (p.includes('/available_models/records')) return json(list(models))
  if (p.includes('/requests/records/'))
    return json({ ...reqs[0], id: 'r9', prompt: 'hi', status: 'pending', response: '' })
  if (p.includes('/requests/records'))
    return json(list(url.searchParams.get('filter')?.includes('c1') ? reqs : []))
  if (p.includes('/config/records')) return json(list([{ default_temperature: 0.7 }]))
  if (p.includes('/user_balances/records'))
    return json(list([{ balance: 9876.5, total_earned: 120, total_spent: 243.5 }]))
  if (p.includes('/user_credit_txs/records'))
    return json(list(txs, Number(url.searchParams.get('page') ?? 1), 3))
  if (p === '/api/chat/send') {
    sent = true
    setTimeout(pushStream, 50)
    return json({ request_id: 'r9', status: 'queued', position: 0 })
  }
  if (p === '/api/chat/quote')
    return json({
      available: 1000,
      estimated_input: 2,
      max_cost: 258,
      output_cap: 256,
      min_cost: 18,
    })
  return json({ status: 404, message: 'Not found', data: {} }, 404)
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
})
const shots = [
  ['login', '/login', false],
  ['chat', '/chat?c=c1', true],
  ['chat-empty', '/chat?c=c3', true],
  ['chat-welcome', '/chat', true],
  ['profile', '/profile', true],
]
for (const theme of ['light', 'dark']) {
  for (const width of [1280, 390]) {
    const ctx = await browser.newContext({ viewport: { width, height: 820 } })
    await ctx.route('**/api/**', api)
    const page = await ctx.newPage()
    page.on('pageerror', (e) => console.error('pageerror', e.message))
    for (const [name, path, auth] of shots) {
      await page.goto(`${base}/login`)
      await page.evaluate(
        ([a, t, u, th]) => {
          localStorage.setItem('meshwork-theme', th)
          if (a) localStorage.setItem('pocketbase_auth', JSON.stringify({ token: t, record: u }))
          else localStorage.removeItem('pocketbase_auth')
        },
        [auth, token, user, theme],
      )
      await page.goto(base + path)
      await page.waitForTimeout(900)
      await page.screenshot({ path: `${outDir}/${name}-${theme}-${width}.png` })
      if (width === 1280) await axe(page, `${name}-${theme}`)
    }
    await ctx.close()
  }
}
// Interactions.
for (const [width, theme] of [
  [1280, 'light'],
  [390, 'light'],
  [1280, 'dark'],
]) {
  const ctx = await browser.newContext({ viewport: { width, height: 820 } })
  await ctx.route('**/api/**', api)
  const page = await ctx.newPage()
  page.on('pageerror', (e) => console.error('pageerror', e.message))
  await page.goto(`${base}/login`)
  await page.evaluate(
    ([t, u, th]) => {
      localStorage.setItem('pocketbase_auth', JSON.stringify({ token: t, record: u }))
      localStorage.setItem('meshwork-theme', th)
    },
    [token, user, theme],
  )
  await page.goto(`${base}/chat?c=c1`)
  await page.waitForTimeout(600)
  const links = await page.$$eval('.markdown a', (as) => as.map((a) => a.getAttribute('href')))
  const scripts = await page.$$eval('.markdown script', (s) => s.length)
  console.log('markdown links', JSON.stringify(links), 'scripts', scripts)
  if (width === 390) {
    await page.getByRole('button', { name: 'Open menu' }).click()
    await page.waitForTimeout(400)
    await page.screenshot({ path: `${outDir}/x-mobile-menu-${theme}-${width}.png` })
    await page.keyboard.press('Escape')
    await page.getByRole('button', { name: 'Open sidebar' }).click()
    await page.waitForTimeout(400)
    await page.screenshot({ path: `${outDir}/x-mobile-sidebar-${theme}-${width}.png` })
    await page.getByRole('button', { name: 'Close sidebar' }).first().click()
  }
  await page.getByRole('button', { name: 'Account menu' }).click()
  await page.waitForTimeout(300)
  await page.screenshot({ path: `${outDir}/x-user-menu-${theme}-${width}.png` })
  await axe(page, 'user-menu')
  await page.keyboard.press('Escape')
  await page.goto(`${base}/chat?c=c3`)
  await page.waitForTimeout(600)
  await page.getByRole('button', { name: /^Model:/ }).click()
  await page.waitForTimeout(300)
  await page.screenshot({ path: `${outDir}/x-model-picker-${theme}-${width}.png` })
  await axe(page, 'model-picker')
  await page.keyboard.press('Escape')
  await page.getByRole('button', { name: 'Chat settings' }).click()
  await page.waitForTimeout(300)
  await page.screenshot({ path: `${outDir}/x-settings-${theme}-${width}.png` })
  await axe(page, 'settings')
  await page.keyboard.press('Escape')
  await page.getByRole('textbox', { name: 'Message' }).fill('Tell me a story\nwith two lines')
  await page.getByRole('textbox', { name: 'Message' }).press('Enter')
  await page.waitForTimeout(60)
  await page.screenshot({ path: `${outDir}/x-sent-early-${theme}-${width}.png` })
  await page.waitForTimeout(700)
  await page.screenshot({ path: `${outDir}/x-sent-mid-${theme}-${width}.png` })
  await page.waitForTimeout(2500)
  await page.screenshot({ path: `${outDir}/x-sent-done-${theme}-${width}.png` })
  await ctx.close()
}
await browser.close()
server.close()
console.log('screenshots in', outDir)
