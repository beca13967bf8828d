/**
 * @module The scheduler's database writes for one request and its jobs, each followed by the
 * record events realtime subscribers need (settlement and failure write with Kysely in one
 * transaction, so their rows are published after the commit).
 */
import type { CoreApp } from '../app.ts'
import { requireCollection } from '../collections/registry.ts'
import { server as superuser } from '../records/caller.ts'
import type { Row } from '../records/serialize.ts'
import { nowDate } from '../../tools/dates.ts'
import {
  cancelRequest,
  chargeDeletedRequest,
  failRequest,
  settleRequest,
  type Cancellation,
  type Completion,
} from '../ledger/settlement.ts'
import { emitBalance, emitById, emitStored } from './emit-stored.ts'
import type { Work } from './work.ts'

/** A `node_jobs` row (pending) for one offer; its id is the protocol's job_id. */
export async function createJob(core: CoreApp, requestId: string, nodeId: string): Promise<string> {
  const job = await core.records.create(superuser, requireCollection('node_jobs'), {
    request: requestId,
    node: nodeId,
    status: 'pending',
  })
  return String(job.id)
}

export async function setJobStatus(core: CoreApp, jobId: string, status: string): Promise<void> {
  // A job row deleted with its request (cascade) has nothing left to update.
  await core.records
    .update(superuser, requireCollection('node_jobs'), jobId, { status })
    .catch(() => {})
}

export async function loadRequestRow(core: CoreApp, requestId: string): Promise<Row | null> {
  const db = core.database.db
  return (
    (await db.selectFrom('requests').selectAll().where('id', '=', requestId).executeTakeFirst()) ??
    null
  )
}

/**
 * The request is running on `nodeId`; answers the stored row (the base of partial events). No
 * event here: the scheduler publishes the row with the text streamed so far, so a subscriber
 * never sees the response go back to empty.
 */
export async function markProcessing(
  core: CoreApp,
  requestId: string,
  nodeId: string,
): Promise<Row | null> {
  const res = await core.database.db
    .updateTable('requests')
    .set({ status: 'processing', node: nodeId, updated: nowDate() })
    .where('id', '=', requestId)
    .where('status', 'in', ['pending', 'processing'])
    .executeTakeFirst()
  if (Number(res.numUpdatedRows) !== 1) return null
  return loadRequestRow(core, requestId)
}

/**
 * Settles (exactly once) and publishes the final request, balances, ledger rows, conversation,
 * node. Answers 'settled', 'ended' (it had already ended: nothing changed) or 'deleted' (its row is
 * gone: deleted with its conversation or account while the answer came in).
 */
export async function settleAndPublish(
  core: CoreApp,
  completion: Completion,
): Promise<'settled' | 'ended' | 'deleted'> {
  const settled = await settleRequest(core.database.db, completion)
  if (!settled && !(await loadRequestRow(core, completion.requestId))) return 'deleted'
  await emitById(core, 'requests', completion.requestId)
  if (!settled) return 'ended'
  await emitBalance(core, settled.user)
  if (settled.nodeOwner !== settled.user) await emitBalance(core, settled.nodeOwner)
  await emitStored(
    core,
    'user_credit_txs',
    { column: 'request', value: completion.requestId },
    'create',
  )
  if (settled.conversation) await emitById(core, 'conversations', settled.conversation)
  await emitById(core, 'nodes', completion.nodeId)
  return 'settled'
}

/**
 * Ends a request its owner stopped, pays for what was produced (ledger/settlement.ts
 * `cancelRequest`) and publishes the rows it wrote. False when it had already ended.
 */
export async function cancelAndPublish(core: CoreApp, c: Cancellation): Promise<boolean> {
  const settled = await cancelRequest(core.database.db, c)
  if (!settled) return false
  await emitById(core, 'requests', c.requestId)
  await emitBalance(core, settled.user)
  if (settled.cost > 0) {
    if (settled.nodeOwner !== settled.user) await emitBalance(core, settled.nodeOwner)
    await emitStored(core, 'user_credit_txs', { column: 'request', value: c.requestId }, 'create')
  }
  if (settled.conversation) await emitById(core, 'conversations', settled.conversation)
  return true
}

/** Charges the streamed part of a deleted request (at most once) and publishes the balances. */
export async function chargeDeletedAndPublish(
  core: CoreApp,
  work: Work,
  nodeId: string,
  tokensOutput: number,
): Promise<void> {
  const charged = await chargeDeletedRequest(core.database.db, {
    requestId: work.requestId,
    user: work.user,
    nodeId,
    tokensInput: work.estimatedInput,
    tokensOutput,
    multiplierUnits: work.multiplierUnits,
    reservedUnits: work.reservedUnits,
  })
  if (!charged) return
  await emitBalance(core, charged.user)
  await emitBalance(core, charged.nodeOwner)
  await emitStored(core, 'user_credit_txs', { column: 'request', value: work.requestId }, 'create')
}

/** Fails a retryable request, releases its hold and publishes both. */
export async function failAndPublish(
  core: CoreApp,
  requestId: string,
  user: string,
  message: string,
): Promise<void> {
  if (await failRequest(core.database.db, requestId, message, true)) {
    await emitById(core, 'requests', requestId)
    await emitBalance(core, user)
  }
}
