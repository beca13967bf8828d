/**
 * bench/web/ab.ts: two builds of the web app compared like with like. Each build is served by
 * its own coordinator seeded alike (a 200-request conversation); cold loads of /chat alternate
 * between them, so both see the same machine load. Figures: wall clock from navigation start to
 * the newest answer rendered (its <strong>) inside the visible message list, and the page's
 * main-thread CPU time until then (Chromium's ThreadTime). Used for docs/performance.md.
 * With WARM=1 each measured load is a returning visit: the same browser context has loaded the
 * page three times before (HTTP cache and V8's code cache warm, as for a user who comes back).
 * Run: npx tsx bench/web/ab.ts <distA> <distB>   (env RUNS=9, SEED=200, WARM=0)
 */
import type { Browser } from 'playwright-core'
import { launchBrowser } from '../../e2e/harness/browser.ts'
import {
  createUser,
  seedConversation,
  startCoordinator,
  type Coordinator,
  type TestUser,
} from '../../e2e/harness/coordinator.ts'
import { median } from '../lib/coordinator-process.ts'
import { mainThreadMs, newestAnswerShownAt, watchMainThread } from './newest-answer.ts'
import { loadavg } from 'node:os'

const runs = Number(process.env.RUNS ?? 9)
const seed = Number(process.env.SEED ?? 200)
const visitsBefore = process.env.WARM === '1' ? 3 : 0
const [distA, distB] = process.argv.slice(2)
if (!distA || !distB) throw new Error('usage: ab.ts <distA> <distB>')

interface Side {
  name: string
  server: Coordinator
  user: TestUser
  conversation: string
  wall: number[]
  cpu: number[]
}

async function side(name: string, dist: string): Promise<Side> {
  const server = await startCoordinator(dist)
  const user = await createUser(server, 'ab')
  const conversation = await seedConversation(server, user, seed, 'Long Conversation')
  return { name, server, user, conversation, wall: [], cpu: [] }
}

async function load(browser: Browser, s: Side) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  await context.addInitScript(
    ([token, record]) => localStorage.setItem('pocketbase_auth', JSON.stringify({ token, record })),
    [s.user.token, s.user.record] as const,
  )
  for (let v = 0; v < visitsBefore; v++) {
    const earlier = await context.newPage()
    await earlier.goto(`${s.server.url}/chat?c=${s.conversation}`, { waitUntil: 'networkidle' })
    await earlier.close()
  }
  const page = await context.newPage()
  const cdp = await watchMainThread(page)
  await page.goto(`${s.server.url}/chat?c=${s.conversation}`, { waitUntil: 'commit' })
  const ms = await newestAnswerShownAt(page, `Reply number ${seed}:`)
  const cpu = await mainThreadMs(cdp)
  await context.close()
  return { ms, cpu }
}

const sides = [await side('A', distA), await side('B', distB)]
const browser = await launchBrowser()
try {
  for (let i = 0; i <= runs; i++) {
    for (const s of i % 2 ? [...sides].reverse() : sides) {
      const r = await load(browser, s)
      if (i === 0) continue // warm-up of each coordinator
      s.wall.push(r.ms)
      s.cpu.push(r.cpu)
    }
  }
  for (const s of sides)
    console.log(
      `${s.name} (${s === sides[0] ? distA : distB}): wall median ${median(s.wall).toFixed(0)} ms (min ${Math.min(...s.wall).toFixed(0)}), main-thread CPU median ${median(s.cpu).toFixed(0)} ms, ${runs} loads`,
    )
  console.log(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  )
} finally {
  await browser.close()
  for (const s of sides) await s.server.stop()
}
