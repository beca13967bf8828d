/**
 * @module Stopping a request (issue 10): the scheduler that has it cancels it at once (its node is
 * told to stop, what was produced is kept and paid for). Scaled out, the request may be another
 * process's: that process hears the cancel over the bus and ends it, and this one waits for the
 * stored row to end. A request that no process has (its process stopped) is ended here, uncharged.
 */
import type { CoreApp } from '../app.ts'
import { OPEN_STATUSES } from '../ledger/settlement.ts'
import { cancelAndPublish } from '../scheduler/request-writes.ts'
import type { Scheduler } from '../scheduler/scheduler.ts'

export const CANCEL_CHANNEL = 'request-cancel'

export interface CancelMessage {
  requestId: string
}

/** How long a process waits for another process to end a request it cancelled over the bus. */
export const REMOTE_CANCEL_WAIT_MS = 5000

/** Every process cancels the requests it has when any process is asked to. */
export function listenForCancels(core: CoreApp, scheduler: Scheduler): () => void {
  return core.bus.subscribe(CANCEL_CHANNEL, (message) => {
    const requestId = (message as CancelMessage)?.requestId
    if (typeof requestId === 'string') void scheduler.cancel(requestId)
  })
}

/** Ends the request as cancelled (or leaves it as it ended); resolves once it has ended. */
export async function stopRequest(
  core: CoreApp,
  scheduler: Scheduler,
  requestId: string,
  waitMs = REMOTE_CANCEL_WAIT_MS,
): Promise<void> {
  const local = scheduler.cancel(requestId)
  if (local) return local
  if (!(await isOpen(core, requestId))) return
  if (core.bus.kind === 'redis') {
    core.bus.publish(CANCEL_CHANNEL, { requestId } satisfies CancelMessage)
    const deadline = Date.now() + waitMs
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50))
      if (!(await isOpen(core, requestId))) return
    }
  }
  await cancelAndPublish(core, {
    requestId,
    nodeId: '',
    response: '',
    tokensInput: 0,
    tokensOutput: 0,
    processingTimeMs: 0,
  })
}

async function isOpen(core: CoreApp, requestId: string): Promise<boolean> {
  const row = await core.database.db
    .selectFrom('requests')
    .select('status')
    .where('id', '=', requestId)
    .executeTakeFirst()
  return Boolean(row) && (OPEN_STATUSES as readonly string[]).includes(String(row!.status))
}
