/**
 * @module When the long chat counts as shown, for every web bench alike: the newest answer on
 * screen as the reader sees it, rendered markdown (its **bold** is a <strong>) inside the message
 * list's visible area, checked every animation frame. Also the page's main-thread CPU time, a
 * figure the machine's other load moves far less than the wall clock.
 */
import type { CDPSession, Page } from 'playwright-core'

/** Resolves with the page's `performance.now()` at the first frame where the answer is in view. */
export async function newestAnswerShownAt(page: Page, marker: string): Promise<number> {
  const handle = await page.waitForFunction(
    (m) => {
      const log = document.querySelector('[role="log"]')
      const answer = Array.from(log?.querySelectorAll('.markdown') ?? []).find(
        (el) => el.textContent?.includes(m) && el.querySelector('strong'),
      )
      if (!log || !answer) return false
      const box = answer.getBoundingClientRect()
      const view = log.getBoundingClientRect()
      return box.top >= view.top && box.bottom <= view.bottom + 1 ? performance.now() : false
    },
    marker,
    { polling: 'raf', timeout: 30_000 },
  )
  return (await handle.jsonValue()) as number
}

/** Starts counting the page's main-thread CPU time; call before navigating. */
export async function watchMainThread(page: Page): Promise<CDPSession> {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('Performance.enable', { timeDomain: 'threadTicks' } as never)
  return cdp
}

/** The main thread's CPU time so far, in ms (Chromium's `ThreadTime` metric). */
export async function mainThreadMs(cdp: CDPSession): Promise<number> {
  const metrics = (await cdp.send('Performance.getMetrics')) as {
    metrics: Array<{ name: string; value: number }>
  }
  return 1000 * (metrics.metrics.find((m) => m.name === 'ThreadTime')?.value ?? NaN)
}
