// Dev aid: screenshots of My Nodes, Add Node, Network and Approve Node against a faked API.
// Usage: npm run build -w @meshwork/web && node packages/web/scripts/screenshots-nodes.mjs [outDir]
import { createServer } from 'node:http'
import { mkdir, readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'

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
const outDir = process.argv[2] ?? '/tmp/shots2'
await mkdir(outDir, { recursive: true })
const types = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
}
const server = createServer(async (req, res) => {
  const path = new URL(req.url, 'http://x').pathname
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
  credits: 120,
  verified: true,
}
const ago = (h) => new Date(Date.now() - h * 3600e3).toISOString().replace('T', ' ')
const list = (items) => ({ page: 1, perPage: 500, totalItems: items.length, totalPages: 1, items })
const GB = 1024 ** 3
const models = [
  {
    id: 'm1',
    name: 'stories260k',
    display_name: 'Stories 260K',
    file_size_bytes: 1_200_000,
    is_active: true,
    sort_order: 1,
  },
  {
    id: 'm2',
    name: 'llama-3-8b',
    display_name: 'Llama 3 8B Instruct',
    file_size_bytes: 4.7 * GB,
    is_active: true,
    sort_order: 2,
  },
  {
    id: 'm3',
    name: 'mixtral',
    display_name: 'Mixtral 8x7B',
    file_size_bytes: 26.4 * GB,
    is_active: true,
    sort_order: 3,
  },
  {
    id: 'm4',
    name: 'qwen',
    display_name: 'Qwen 2.5 7B',
    file_size_bytes: 4.4 * GB,
    is_active: true,
    sort_order: 4,
  },
]
const nodes = [
  {
    id: 'n1',
    user: 'u1',
    device_name: 'studio-mac',
    status: 'online',
    total_requests: 1284,
    reputation_score: 4.83,
    is_active: true,
    last_seen: ago(0.01),
  },
  {
    id: 'n2',
    user: 'u1',
    device_name: 'garage-linux-3090',
    status: 'busy',
    total_requests: 20931,
    reputation_score: 4.5,
    is_active: true,
    last_seen: ago(0.02),
  },
  {
    id: 'n3',
    user: 'u1',
    device_name: 'old-laptop',
    status: 'offline',
    total_requests: 12,
    reputation_score: 3,
    is_active: false,
    last_seen: ago(50),
  },
  {
    id: 'n4',
    user: 'u1',
    device_name: '',
    status: 'starting',
    total_requests: 0,
    reputation_score: 0,
    is_active: false,
    last_seen: '',
  },
]
const nm = (id, node, model, over) => ({
  id,
  node,
  model,
  requested_download: true,
  requested_serving: false,
  is_downloaded: false,
  is_serving: false,
  tokens_per_second: 0,
  download_progress: '0',
  error_message: '',
  expand: { model: models.find((m) => m.id === model) },
  ...over,
})
const nodeModels = [
  nm('a1', 'n1', 'm1', {
    is_downloaded: true,
    requested_serving: true,
    is_serving: true,
    tokens_per_second: 412.37,
    download_progress: '100',
  }),
  nm('a2', 'n1', 'm2', { download_progress: '37.4' }),
  nm('a3', 'n1', 'm4', { is_downloaded: true, download_progress: '100' }),
  nm('a4', 'n1', 'm3', {
    requested_download: true,
    download_progress: '2',
    error_message: 'Not enough disk space: 26.4 GB needed, 18.2 GB free',
  }),
  nm('b1', 'n2', 'm2', {
    is_downloaded: true,
    requested_serving: true,
    is_serving: true,
    tokens_per_second: 88.1,
  }),
  nm('b2', 'n2', 'm1', {
    is_downloaded: true,
    requested_serving: true,
    is_serving: true,
    tokens_per_second: 900,
  }),
]
const statuses = [
  'completed',
  'completed',
  'completed',
  'completed',
  'failed',
  'processing',
  'pending',
]
const requests = []
for (let h = 0; h < 24; h++) {
  const n = Math.round(6 + 5 * Math.sin(h / 3) + (h % 5))
  for (let i = 0; i < n; i++) {
    const status =
      h > 1 && (statuses[i % 7] === 'processing' || statuses[i % 7] === 'pending')
        ? 'completed'
        : statuses[i % 7]
    requests.push({
      id: `r${h}-${i}`,
      status,
      created: ago(h + i / (n + 1)),
      processing_time_ms: 400 + ((h * 137 + i * 53) % 900),
    })
  }
}
const jobs = requests.map((r, i) => ({
  id: `j${i}`,
  status: r.status === 'pending' ? 'pending' : 'acked',
  created: r.created,
}))

function api(state) {
  return (route) => {
    const url = new URL(route.request().url())
    const p = url.pathname
    const filter = url.searchParams.get('filter') ?? ''
    const json = (body, status = 200) =>
      route.fulfill({ status, contentType: 'application/json', body: JSON.stringify(body) })
    if (p.endsWith('/auth-refresh')) return json({ token, record: user })
    if (state.down && p !== '/api/realtime') return route.abort()
    if (p === '/api/realtime') {
      if (route.request().method() === 'POST') return route.fulfill({ status: 204 })
      return route.fulfill({
        status: 200,
        contentType: 'text/event-stream',
        body: 'id:c1\nevent:PB_CONNECT\ndata:{"clientId":"c1"}\n\n',
      })
    }
    if (p === '/api/system/health')
      return json({ status: 'ok', services: { database: true, redis: false } })
    if (p === '/api/auth/complete-flow') return json({ status: 'ok' })
    if (p.includes('/collections/models/')) return json(list(models))
    if (p.includes('/collections/nodes/')) return json(list(state.empty ? [] : nodes))
    if (p.includes('/collections/node_jobs/')) return json(list(state.empty ? [] : jobs))
    if (p.includes('/collections/requests/')) return json(list(state.empty ? [] : requests))
    if (p.includes('/collections/node_models/')) {
      const node = /node = ['"]([^'"]+)['"]/.exec(filter)?.[1]
      let items = nodeModels.filter((r) => !node || r.node === node)
      if (filter.includes('is_serving = true')) items = items.filter((r) => r.is_serving)
      return json(list(items))
    }
    if (p.includes('/collections/user_balances/'))
      return json(list([{ balance: 120, total_earned: 300, total_spent: 180 }]))
    return json(list([]))
  }
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
})
const shots = [
  ['nodes', '/nodes', {}],
  ['nodes-empty', '/nodes', { empty: true }],
  ['setup', '/nodes/setup', {}],
  ['network', '/network', {}],
  ['network-offline', '/network', { down: true }],
  ['approve', '/auth/approve-node?token=abc123&device=studio-mac', {}],
  ['approve-missing', '/auth/approve-node', {}],
]
for (const theme of ['light', 'dark']) {
  for (const width of [1280, 390]) {
    const ctx = await browser.newContext({ viewport: { width, height: 860 } })
    const state = {}
    await ctx.route('**/api/**', api(state))
    const page = await ctx.newPage()
    page.on('pageerror', (e) => console.error('pageerror', e.message))
    page.on('dialog', (d) => d.dismiss())
    await ctx.addInitScript(
      ([t, u, th]) => {
        localStorage.setItem('meshwork-theme', th)
        localStorage.setItem('pocketbase_auth', JSON.stringify({ token: t, record: u }))
      },
      [token, user, theme],
    )
    for (const [name, path, flags] of shots) {
      Object.assign(state, { down: false, empty: false }, flags)
      await page.goto(base + path)
      await page.waitForTimeout(1200)
      await page.screenshot({ path: `${outDir}/${name}-${theme}-${width}.png`, fullPage: true })
      if (width === 1280) await axe(page, `${name}-${theme}`)
    }
    Object.assign(state, { down: false, empty: false })
    // Edit dialog and the other chart tabs.
    await page.goto(`${base}/nodes`)
    await page.getByRole('button', { name: 'Edit studio-mac' }).click()
    await page.waitForTimeout(800)
    await page.screenshot({ path: `${outDir}/edit-${theme}-${width}.png` })
    if (width === 1280) await axe(page, `edit-${theme}`)
    await page.keyboard.press('Escape')
    await page.getByRole('button', { name: 'Edit old-laptop' }).click()
    await page.waitForTimeout(800)
    await page.screenshot({ path: `${outDir}/edit-idle-${theme}-${width}.png` })
    await page.keyboard.press('Escape')
    await page.goto(`${base}/network`)
    await page.getByRole('heading', { name: 'Active Nodes' }).scrollIntoViewIfNeeded()
    await page.waitForTimeout(300)
    await page.screenshot({ path: `${outDir}/network-bottom-${theme}-${width}.png` })
    for (const tab of ['Performance Metrics', 'Job Queue']) {
      await page.getByRole('tab', { name: tab }).click()
      await page.waitForTimeout(700)
      const panel = page.getByRole('tabpanel')
      await panel.scrollIntoViewIfNeeded()
      await page.screenshot({
        path: `${outDir}/network-${tab.split(' ')[0].toLowerCase()}-${theme}-${width}.png`,
      })
    }
    await ctx.close()
  }
}
await browser.close()
server.close()
