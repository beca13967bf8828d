/**
 * @module The device-link flow (coordinator side): a node starts a flow and gets a single-use
 * state token plus a device secret; the signed-in owner approves or denies it from the approve
 * page; the node long-polls `wait` with both and receives its node id and credential once.
 */
import type { Database } from '../../db/database.ts'
import { ApiError, tooManyRequests } from '../../tools/api-error.ts'
import { formatDate, nowDate } from '../../tools/dates.ts'
import { newRecordId, randomString } from '../../tools/ids.ts'
import { requireCollection } from '../collections/registry.ts'
import { defaultRow } from '../records/record-body.ts'
import type { Row } from '../records/serialize.ts'
import { withUnitOfWork, type WriteTarget } from '../records/unit-of-work.ts'
import { issueCredential, newSecret, sha256Hex } from './node-credentials.ts'

export const LINK_FLOW_TTL_MS = 10 * 60_000
/**
 * Long polls one flow may have at once in a process (an agent waits with one; a retry may overlap
 * it). Each reads the flow once a second, and the state token and device secret are anyone's who
 * started the flow: unbounded, one flow's idle sockets made as many statements a second.
 */
export const MAX_WAITS_PER_FLOW = 4
export const DENIED_MESSAGE = 'User denied authorization'

export interface StartedFlow {
  state_token: string
  device_secret: string
  approve_url: string
  expires_at: string
}

export type WaitResult =
  { status: 'pending' } | { status: 'approved'; node_id: string; credential: string }

const invalidToken = () => new ApiError(400, 'Invalid or expired authorization token.')

export class LinkFlows {
  /** Wakes long polls in this process at once; other processes see the change on their next poll. */
  private waiters = new Map<string, Set<() => void>>()
  /** Long polls under way, by state token (MAX_WAITS_PER_FLOW). */
  private polls = new Map<string, number>()

  constructor(
    private database: Database,
    /** Where the approval's unit of work writes and publishes (the core). */
    private target: WriteTarget,
    private ttlMs = LINK_FLOW_TTL_MS,
  ) {}

  async start(deviceName: string, webBase: string): Promise<StartedFlow> {
    const stateToken = randomString(40)
    const deviceSecret = newSecret()
    const now = Date.now()
    const expiresAt = new Date(now + this.ttlMs)
    // Old flows (and any credential never collected) do not stay around.
    await this.database.db
      .deleteFrom('_link_flows')
      .where('expires_at', '<', formatDate(new Date(now - 24 * 3600_000)))
      .execute()
    await this.database.db
      .insertInto('_link_flows')
      .values({
        id: newRecordId(),
        state_token: stateToken,
        device_secret_hash: sha256Hex(deviceSecret),
        device_name: deviceName,
        status: 'pending',
        expires_at: formatDate(expiresAt),
        created: nowDate(),
        updated: nowDate(),
      })
      .execute()
    const url = new URL('/auth/approve-node', webBase)
    url.searchParams.set('token', stateToken)
    url.searchParams.set('device', deviceName)
    return {
      state_token: stateToken,
      device_secret: deviceSecret,
      approve_url: url.toString(),
      expires_at: expiresAt.toISOString(),
    }
  }

  /** Approves a pending flow for `userId` (from the caller's token): creates the node. */
  async approve(
    stateToken: string,
    userId: string,
  ): Promise<{ node_id: string; device_name: string }> {
    const flow = await this.pendingFlow(stateToken)
    const nodes = requireCollection('nodes')
    const now = nowDate()
    const row: Row = {
      ...defaultRow(nodes),
      id: newRecordId(),
      user: userId,
      device_name: String(flow.device_name).slice(0, 100) || 'Unknown',
      status: 'offline',
    }
    for (const f of nodes.fields) if (f.type === 'autodate') row[f.name] = now
    // One transaction: the claim, the node, its credential and the approval. A process killed
    // half-way leaves the flow pending (the owner approves again), never a flow stuck half-way
    // nor a node no device can use.
    const node = await withUnitOfWork(this.target, async (uow) => {
      // Claim the flow first, so two approvals can never create two nodes.
      const claimed = await uow.trx
        .updateTable('_link_flows')
        .set({ status: 'approving', user: userId, updated: now })
        .where('state_token', '=', stateToken)
        .where('status', '=', 'pending')
        .executeTakeFirst()
      if (Number(claimed.numUpdatedRows) !== 1) throw invalidToken()
      const stored = await uow.insert('nodes', row)
      const credential = await issueCredential(uow.trx, String(stored.id))
      // The plain credential waits in the flow row only until the node collects it (see wait).
      await uow.trx
        .updateTable('_link_flows')
        .set({ status: 'approved', node: stored.id, credential, updated: nowDate() })
        .where('state_token', '=', stateToken)
        .execute()
      return stored
    })
    this.wake(stateToken)
    return { node_id: String(node.id), device_name: String(node.device_name) }
  }

  /**
   * What the approve page shows about a pending flow: the device name the node sent when it
   * started the flow (as the node will be named), never what the approve URL says.
   */
  async describe(stateToken: string): Promise<{ device_name: string; expires_at: string }> {
    const flow = await this.pendingFlow(stateToken)
    const expires = new Date(Date.parse(String(flow.expires_at).replace(' ', 'T')))
    return {
      device_name: String(flow.device_name).slice(0, 100),
      expires_at: expires.toISOString(),
    }
  }

  async deny(stateToken: string, userId: string, error: string): Promise<void> {
    await this.pendingFlow(stateToken)
    const done = await this.finish(stateToken, {
      status: 'failed',
      user: userId,
      error: error || DENIED_MESSAGE,
    })
    if (!done) throw invalidToken()
  }

  /** Long poll: resolves on a decision or after `timeoutMs` with pending. */
  async wait(stateToken: string, deviceSecret: string, timeoutMs = 25_000): Promise<WaitResult> {
    const polls = this.polls.get(stateToken) ?? 0
    if (polls >= MAX_WAITS_PER_FLOW) throw tooManyRequests(1000)
    this.polls.set(stateToken, polls + 1)
    try {
      return await this.poll(stateToken, deviceSecret, timeoutMs)
    } finally {
      const left = (this.polls.get(stateToken) ?? 1) - 1
      if (left > 0) this.polls.set(stateToken, left)
      else this.polls.delete(stateToken)
    }
  }

  private async poll(
    stateToken: string,
    deviceSecret: string,
    timeoutMs: number,
  ): Promise<WaitResult> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const flow = await this.database.db
        .selectFrom('_link_flows')
        .selectAll()
        .where('state_token', '=', stateToken)
        .executeTakeFirst()
      if (!flow || flow.device_secret_hash !== sha256Hex(deviceSecret)) {
        throw new ApiError(400, 'Invalid authorization request.')
      }
      if (flow.status === 'failed') {
        // Sent as written: the node recognises a denial by its message (docs/node-protocol.md).
        const denied = new ApiError(400, DENIED_MESSAGE)
        denied.message = String(flow.error || DENIED_MESSAGE)
        throw denied
      }
      if (flow.status === 'approved') {
        // Hand the credential out exactly once.
        const taken = await this.database.db
          .updateTable('_link_flows')
          .set({ status: 'collected', credential: '', updated: nowDate() })
          .where('state_token', '=', stateToken)
          .where('status', '=', 'approved')
          .executeTakeFirst()
        if (Number(taken.numUpdatedRows) !== 1) continue
        return {
          status: 'approved',
          node_id: String(flow.node),
          credential: String(flow.credential),
        }
      }
      if (flow.status === 'collected')
        throw new ApiError(400, 'This authorization request was already completed.')
      if (isExpired(flow.expires_at)) throw new ApiError(410, 'The authorization request expired.')
      const left = deadline - Date.now()
      if (left <= 0) return { status: 'pending' }
      await this.sleepUntilChange(stateToken, Math.min(left, 1000))
    }
  }

  private async pendingFlow(stateToken: string) {
    if (!stateToken) throw new ApiError(400, 'Missing authorization token.')
    const flow = await this.database.db
      .selectFrom('_link_flows')
      .selectAll()
      .where('state_token', '=', stateToken)
      .executeTakeFirst()
    if (!flow || flow.status !== 'pending' || isExpired(flow.expires_at)) throw invalidToken()
    return flow
  }

  private async finish(stateToken: string, values: Record<string, unknown>): Promise<boolean> {
    const res = await this.database.db
      .updateTable('_link_flows')
      .set({ ...values, updated: nowDate() })
      .where('state_token', '=', stateToken)
      .where('status', '=', 'pending')
      .executeTakeFirst()
    this.wake(stateToken)
    return Number(res.numUpdatedRows) === 1
  }

  private wake(stateToken: string) {
    for (const wake of this.waiters.get(stateToken) ?? []) wake()
  }

  private sleepUntilChange(stateToken: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiters.get(stateToken) ?? new Set()
      this.waiters.set(stateToken, set)
      const wake = () => {
        clearTimeout(timer)
        set.delete(wake)
        if (!set.size) this.waiters.delete(stateToken)
        resolve()
      }
      const timer = setTimeout(wake, ms)
      set.add(wake)
    })
  }
}

function isExpired(expiresAt: unknown): boolean {
  const t = Date.parse(String(expiresAt).replace(' ', 'T'))
  return !Number.isFinite(t) || t <= Date.now()
}
