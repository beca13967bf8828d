/**
 * @module Stopping a request (issue 10): the scheduler that has it cancels it at once (its node is
 * told to stop, what was produced is kept and paid for). Scaled out, the request may be another
 * process's: that process hears the cancel over the bus and ends it, and this one waits for the
 * stored row to end. A request that no process has (its process stopped) is ended here, uncharged.
 */
import type { CoreApp } from '../app.ts'
import { cancellationOfNothing, OPEN_STATUSES } from '../ledger/settlement.ts'
import { cancelAndPublish } from '../scheduler/request-writes.ts'
import type { Scheduler } from '../scheduler/scheduler.ts'
import { background } from '../../tools/background.ts'
import type { Bus } from '../../tools/bus/bus.ts'

export const CANCEL_CHANNEL = 'request-cancel'

export interface CancelMessage {
  requestId: string
}

/** How long a process waits for another process to end a request it cancelled over the bus. */
export const REMOTE_CANCEL_WAIT_MS = 5000
/** How long the bus may take to answer a ping before a cancel stops waiting for another process. */
const BUS_ANSWER_MS = 1000

/** Every process cancels the requests it has when any process is asked to. */
export function listenForCancels(core: CoreApp, scheduler: Scheduler): () => void {
  return core.bus.subscribe(CANCEL_CHANNEL, (message) => {
    const requestId = (message as CancelMessage)?.requestId
    if (typeof requestId !== 'string') return
    const ending = scheduler.cancel(requestId)
    if (ending) background(ending, `cancelling request ${requestId}`)
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
    // A bus that does not answer (Redis down, frozen, or cut off by a partition) takes the cancel
    // to nobody, or only once it answers again: the request is ended here within a second
    // instead of after the whole wait.
    let unheard = false
    const pinged = busAnswers(core.bus).then((answered) => (unheard = !answered))
    const deadline = Date.now() + waitMs
    while (Date.now() < deadline && !unheard) {
      await new Promise((r) => setTimeout(r, 50))
      if (!(await isOpen(core, requestId))) return
    }
    await pinged
  }
  await cancelAndPublish(core, cancellationOfNothing(requestId))
}

async function isOpen(core: CoreApp, requestId: string): Promise<boolean> {
  const row = await core.database.db
    .selectFrom('requests')
    .select('status')
    .where('id', '=', requestId)
    .executeTakeFirst()
  return Boolean(row) && (OPEN_STATUSES as readonly string[]).includes(String(row!.status))
}

/** Whether the bus answers a ping within BUS_ANSWER_MS (a frozen Redis answers nothing, ever). */
async function busAnswers(bus: Bus): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<boolean>(
    (resolve) => (timer = setTimeout(resolve, BUS_ANSWER_MS, false)),
  )
  try {
    return await Promise.race([bus.ping(), late])
  } finally {
    clearTimeout(timer)
  }
}
