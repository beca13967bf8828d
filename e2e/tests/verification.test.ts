/**
 * Issue 13, point 4 on screen: My Nodes shows each node's verification state (Probation,
 * Verified, Trusted) and its pending earnings; the Profile shows Pending Earnings beside Total
 * Earned; a user whose answer came from a node caught by a canary sees the refund in the history.
 * The money is real: requests held and settled through the ledger (a probation node's earning is
 * held, a verified node's paid), the refund a reversal of the pending earning. Desktop and 390 px,
 * light and dark, axe clean.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { holdCredits } from '../../packages/server/src/core/ledger/reservation.ts'
import {
  reversePendingEarnings,
  REVERSAL_REASON,
} from '../../packages/server/src/core/ledger/pending-earnings.ts'
import { settleRequest } from '../../packages/server/src/core/ledger/settlement.ts'
import { newRecordId } from '../../packages/server/src/tools/ids.ts'
import { withUnitOfWork } from '../../packages/server/src/core/records/unit-of-work.ts'
import { launchBrowser } from '../harness/browser.ts'
import { captureAll } from '../harness/capture.ts'
import {
  createAsServer,
  createUser,
  modelId,
  openAs,
  startCoordinator,
  type Coordinator,
  type TestUser,
} from '../harness/coordinator.ts'

describe('verification state and pending earnings on screen', () => {
  let server: Coordinator
  let browser: Browser
  let owner: TestUser
  let payer: TestUser
  const nodes: Record<string, string> = {}
  const contexts: BrowserContext[] = []

  beforeAll(async () => {
    server = await startCoordinator()
    browser = await launchBrowser()
    owner = await createUser(server, 'owner')
    payer = await createUser(server, 'payer')
    const model = await modelId(server)
    const db = server.core.database.db
    for (const [device_name, verification] of [
      ['New Box', 'probation'],
      ['Old Faithful', 'verified'],
      ['Caught Box', 'probation'],
    ] as const) {
      const node = await createAsServer(server, 'nodes', {
        user: owner.id,
        device_name,
        status: 'online',
        is_active: true,
      })
      await db.updateTable('nodes').set({ verification }).where('id', '=', node.id).execute()
      await createAsServer(server, 'node_models', {
        node: node.id,
        model,
        requested_download: true,
        requested_serving: true,
        is_downloaded: true,
        is_serving: true,
      })
      nodes[device_name] = String(node.id)
    }
    // Paid answers: 30 + 12 credits from New Box (held), 20 from Old Faithful (paid at once),
    // 5 from Caught Box (held, then returned to the payer when it fails a canary).
    const answer = async (node: string, output: number) => {
      const id = newRecordId()
      await withUnitOfWork(server.core, async (uow) => {
        const r = await holdCredits(uow, {
          user: payer.id,
          estimatedInput: 0,
          maxOutput: 256,
          minOutput: 16,
          multiplierUnits: 1000,
        })
        await uow.trx
          .insertInto('requests')
          .values({ id, user: payer.id, model, status: 'pending', reserved: r.amount })
          .execute()
      })
      const settled = await withUnitOfWork(server.core, (uow) =>
        settleRequest(uow, {
          requestId: id,
          nodeId: node,
          response: 'Once upon a time',
          tokensInput: 0,
          tokensOutput: output,
          processingTimeMs: 10,
        }),
      )
      expect(settled?.cost).toBe(output * 1000)
    }
    await answer(nodes['New Box'], 30)
    await answer(nodes['New Box'], 12)
    await answer(nodes['Old Faithful'], 20)
    await answer(nodes['Caught Box'], 5)
    await withUnitOfWork(server.core, (uow) =>
      reversePendingEarnings(uow, nodes['Caught Box'], REVERSAL_REASON),
    )
  })
  afterAll(async () => {
    for (const c of contexts) await c.close()
    await browser?.close()
    await server?.stop()
  })

  async function pageAs(user: TestUser, path: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    contexts.push(context)
    const page = await context.newPage()
    await openAs(page, server, user, path)
    return page
  }

  it("My Nodes: each node's verification state and pending earnings", async () => {
    const page = await pageAs(owner, '/nodes')
    const row = (name: string) => page.getByRole('row', { name: new RegExp(name) })
    await row('New Box').getByText('Probation').waitFor()
    expect(await page.getByRole('columnheader', { name: 'Verification' }).isVisible()).toBe(true)
    expect(await page.getByRole('columnheader', { name: 'Pending' }).isVisible()).toBe(true)
    expect(await row('New Box').textContent()).toContain('42')
    expect(await row('Old Faithful').getByText('Verified').isVisible()).toBe(true)
    expect(await row('Old Faithful').textContent()).not.toContain('20')
    expect(await row('Caught Box').getByText('Probation').isVisible()).toBe(true)
    expect(await row('New Box').getByText('Probation').getAttribute('title')).toMatch(
      /earnings are held/,
    )
    const problems = await captureAll(page, 'verification-my-nodes')
    expect(problems).toEqual([])
    // At 390 px each row is a card with labelled lines: the state and the amount are there too.
    await page.setViewportSize({ width: 390, height: 844 })
    const card = row('New Box')
    expect(await card.getByText('Probation').isVisible()).toBe(true)
    expect(await card.getByText('42').isVisible()).toBe(true)
  })

  it('Profile: Pending Earnings beside Total Earned; the payer sees its refund', async () => {
    const page = await pageAs(owner, '/profile')
    const stat = (label: string) => page.getByRole('group', { name: label, exact: true })
    await page.getByText('Pending Earnings', { exact: true }).waitFor()
    await expect.poll(() => stat('Pending Earnings').textContent()).toContain('42')
    expect(await stat('Total Earned').textContent()).toContain('20')
    expect(await stat('Available').textContent()).toContain('1,020')
    // Beside Total Earned: the next stat in the card, on the same line on a desktop.
    const earned = await page.getByText('Total Earned', { exact: true }).boundingBox()
    const pending = await page.getByText('Pending Earnings', { exact: true }).boundingBox()
    expect(Math.abs(earned!.y - pending!.y)).toBeLessThan(4)
    expect(pending!.x).toBeGreaterThan(earned!.x)
    expect(await captureAll(page, 'verification-profile-owner')).toEqual([])

    const paid = await pageAs(payer, '/profile')
    const refund = paid.getByRole('row', { name: /Inference Refund/ })
    await refund.waitFor()
    expect(await refund.textContent()).toContain('not verified')
    expect(await refund.textContent()).toContain('+5')
    const showRefund = async () => void (await refund.scrollIntoViewIfNeeded())
    expect(
      await captureAll(paid, 'verification-profile-payer', {
        phone: showRefund,
        desktop: showRefund,
      }),
    ).toEqual([])
  })
})
