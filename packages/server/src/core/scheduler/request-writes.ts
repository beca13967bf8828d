/**
 * @module The scheduler's database writes for one request and its jobs, each one unit of work
 * (records/unit-of-work.ts): its rows are published as record events once it commits.
 */
import { OPEN_REQUEST_STATUSES } from '@meshwork/protocol'
import type { CoreApp } from '../app.ts'
import type { Row } from '../records/serialize.ts'
import { nowDate } from '../../tools/dates.ts'
import {
  cancelRequest,
  failRequest,
  settleRequest,
  type Cancellation,
  type Completion,
} from '../ledger/settlement.ts'
import { chargeDeletedRequest } from '../ledger/deleted-requests.ts'
import { withSingleWrite, withUnitOfWork } from '../records/unit-of-work.ts'
import { log } from '../../tools/log.ts'
import type { Work } from './work.ts'

/** Waits before the settlement's second and third tries. */
const SETTLE_RETRY_MS = [250, 1000] as const

/** What recording a job found: `lost` when another process owns the request now. */
export type JobRecord = 'stored' | 'gone' | 'lost'

/**
 * The `node_jobs` row (pending) of an offer already sent; its id is the protocol's job_id. `gone`
 * when the request is gone (deleted with its conversation); `lost` when this process no longer
 * owns it: its lease lapsed (a long pause, a partition from Redis) and a survivor took the request
 * over, so the survivor runs it, not this process. One unit of work (INSERT ... RETURNING, the
 * event from the returned row).
 */
export async function createJob(
  core: CoreApp,
  jobId: string,
  requestId: string,
  nodeId: string,
): Promise<JobRecord> {
  const now = nowDate()
  return withUnitOfWork(core, async (uow) => {
    // An UPDATE, not a SELECT: it locks the row, so a survivor's claim (takeover.ts, an UPDATE of
    // the same row) either comes first and this finds the request lost, or waits for this job's
    // row and then finds it (and stops the job).
    const owned = await uow.trx
      .updateTable('requests')
      .set({ lease_owner: core.processId })
      .where('id', '=', requestId)
      .where('lease_owner', '=', core.processId)
      .executeTakeFirst()
    if (Number(owned.numUpdatedRows) !== 1) {
      const request = await uow.trx
        .selectFrom('requests')
        .select('id')
        .where('id', '=', requestId)
        .executeTakeFirst()
      return request ? 'lost' : 'gone'
    }
    await uow.insert('node_jobs', {
      id: jobId,
      request: requestId,
      node: nodeId,
      status: 'pending',
      created: now,
      updated: now,
    })
    return 'stored'
  })
}

/** A job row's statuses before it ended; an ended one changes no more. */
const LIVE_JOB_STATUSES = ['pending', 'acked']

export async function setJobStatus(core: CoreApp, jobId: string, status: string): Promise<void> {
  // A job row deleted with its request (cascade) has nothing left to update: no row, no event. A
  // failed write is not the request's: the job row is bookkeeping, the request settles anyway.
  // An ended job stays as it ended: a survivor that took the request over failed it, and the
  // lapsed process hearing its node finish afterwards (its answer not settled) does not make it
  // `completed`. One UPDATE: it commits by itself, no BEGIN/COMMIT around it.
  await withSingleWrite(core, (uow) =>
    uow.update('node_jobs', (q) =>
      q
        .set({ status, updated: nowDate() })
        .where('id', '=', jobId)
        .where('status', 'in', LIVE_JOB_STATUSES),
    ),
  ).catch(() => {})
}

export async function loadRequestRow(core: CoreApp, requestId: string): Promise<Row | null> {
  const db = core.database.db
  return (
    (await db.selectFrom('requests').selectAll().where('id', '=', requestId).executeTakeFirst()) ??
    null
  )
}

/**
 * The request is running on `nodeId`; answers the stored row (the base of partial events), null
 * when it is no longer open or no longer this process's (see createJob). Its event carries `present(row)`: the row with the text streamed so
 * far, so a subscriber never sees the response go back to empty.
 */
export async function markProcessing(
  core: CoreApp,
  requestId: string,
  nodeId: string,
  present: (stored: Row) => Row,
): Promise<Row | null> {
  return withSingleWrite(core, async (uow) => {
    const [row] = await uow.update('requests', (q) =>
      q
        .set({ status: 'processing', node: nodeId, updated: nowDate() })
        .where('id', '=', requestId)
        .where('status', 'in', ['pending', 'processing'])
        .where('lease_owner', '=', core.processId),
    )
    if (row) uow.changed('update', 'requests', present(row))
    return row ?? null
  })
}

/**
 * Settles (exactly once) in one unit of work, which publishes the final request, balances, ledger
 * rows, conversation and node once it commits. Answers 'settled', 'ended' (it had already ended:
 * nothing changed) or 'deleted' (its row is gone: deleted with its conversation or account while
 * the answer came in).
 */
export async function settleAndPublish(
  core: CoreApp,
  completion: Completion,
): Promise<'settled' | 'ended' | 'deleted'> {
  // A transaction that failed (a connection dropped, a lock timed out) is tried again after a
  // moment: the node's answer is in hand, and failing would lose it. Settling an open request
  // happens once, so a retry after a commit whose acknowledgement was lost changes nothing.
  for (let attempt = 0; ; attempt++) {
    try {
      const settled = await withUnitOfWork(core, (uow) => settleRequest(uow, completion))
      if (settled) return 'settled'
      // An earlier try may have committed with its answer lost on the way back: its events were
      // never published, and the user's screen would show the request running until a reload.
      if (attempt > 0) await republishEnded(core, completion.requestId)
      return (await loadRequestRow(core, completion.requestId)) ? 'ended' : 'deleted'
    } catch (err) {
      const wait = SETTLE_RETRY_MS[attempt]
      if (wait === undefined) throw err
      log.warn({ err, requestId: completion.requestId }, 'settling a request failed; trying again')
      await new Promise((r) => setTimeout(r, wait))
    }
  }
}

/** Publishes an ended request's row and its user's balance as they are stored now. */
async function republishEnded(core: CoreApp, requestId: string): Promise<void> {
  await withUnitOfWork(core, async (uow) => {
    const request = await uow.trx
      .selectFrom('requests')
      .selectAll()
      .where('id', '=', requestId)
      .executeTakeFirst()
    if (!request || (OPEN_REQUEST_STATUSES as readonly string[]).includes(String(request.status)))
      return
    uow.changed('update', 'requests', request)
    const balance = await uow.trx
      .selectFrom('user_balances')
      .selectAll()
      .where('user', '=', String(request.user))
      .executeTakeFirst()
    if (balance) uow.changed('update', 'user_balances', balance)
  })
}

/**
 * Ends a request its owner stopped, pays for what was produced (ledger/settlement.ts
 * `cancelRequest`) and publishes the rows it wrote. False when it had already ended.
 */
export async function cancelAndPublish(core: CoreApp, c: Cancellation): Promise<boolean> {
  return Boolean(await withUnitOfWork(core, (uow) => cancelRequest(uow, c)))
}

/**
 * Charges the streamed part of a deleted request (at most once) from the hold its deletion kept,
 * releases that hold, and publishes the balances. With `nodeId` empty or `tokensOutput` 0 it only
 * releases the hold.
 */
export async function chargeDeletedAndPublish(
  core: CoreApp,
  work: Work,
  nodeId: string,
  tokensOutput: number,
): Promise<void> {
  await withUnitOfWork(core, (uow) =>
    chargeDeletedRequest(uow, {
      requestId: work.requestId,
      user: work.user,
      nodeId,
      tokensInput: work.estimatedInput,
      tokensOutput,
      multiplierUnits: work.multiplierUnits,
      reservedUnits: work.reservedUnits,
    }),
  )
}

/**
 * Fails a retryable request, releases its hold and publishes both; with `owner`, only while that
 * process still owns the request (Completion's `owner`).
 */
export async function failAndPublish(
  core: CoreApp,
  requestId: string,
  message: string,
  owner?: string,
): Promise<void> {
  await withUnitOfWork(core, (uow) => failRequest(uow, requestId, message, true, owner))
}
