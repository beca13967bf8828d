/**
 * @module link-device
 * The device-link flow, node side: start a flow, hand out the approve URL, then long-poll
 * `wait-flow` until the owner approves or denies or the flow expires.
 */
import { describeNetworkError } from '../agent/network-errors.ts'
import { readJsonBody } from '../agent/read-body-start.ts'
import {
  startFlowResponseSchema,
  waitFlowResponseSchema,
  type StartFlowResponse,
} from '@meshwork/protocol'

export interface LinkDeviceOptions {
  server: string
  deviceName: string
  /** Called once with the URL the owner opens to approve this node. */
  onApproveUrl: (url: string, flow: StartFlowResponse) => void
  signal?: AbortSignal
  /** Pause before asking again after a network error. */
  retryDelayMs?: number
  /** Shortest time between two polls, in case a server answers `pending` without holding. */
  minPollIntervalMs?: number
  now?: () => number
}

export interface LinkedDevice {
  nodeId: string
  credential: string
}

/** The owner denied the link. */
export class LinkDeniedError extends Error {
  override name = 'LinkDeniedError'
}

/** The flow expired or the coordinator no longer knows it. */
export class LinkExpiredError extends Error {
  override name = 'LinkExpiredError'
}

/** The coordinator could not start a flow (unreachable, or an error answer). */
export class LinkStartError extends Error {
  override name = 'LinkStartError'
}

/** Runs the whole flow; resolves with the node's id and credential. */
export async function linkDevice(options: LinkDeviceOptions): Promise<LinkedDevice> {
  const { server, signal } = options
  // No redirect is followed: one would carry the flow's posts (their bodies chosen by the server)
  // to any address, the owner's own network included. The node's WebSocket follows none either.
  const post = (path: string, body: unknown) =>
    fetch(new URL(path, server), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      redirect: 'manual',
      signal,
    })

  const origin = new URL(server).origin
  let res: Response
  try {
    res = await post('/api/auth/start-flow', { device_name: options.deviceName })
  } catch (err) {
    if (signal?.aborted) throw err
    throw new LinkStartError(`Could not reach ${origin}: ${describeNetworkError(err)}`, {
      cause: err,
    })
  }
  if (res.status === 404 || res.status === 405) {
    await res.body?.cancel()
    throw new LinkStartError(
      `${origin} is not a Meshwork server (it answered HTTP ${res.status} to /api/auth/start-flow)`,
    )
  }
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel()
    throw new LinkStartError(
      `${origin} answered with a redirect (HTTP ${res.status}): log in with the coordinator's own address`,
    )
  }
  if (!res.ok)
    throw new LinkStartError(`${origin} refused the device link: ${await errorMessage(res)}`)
  const parsed = startFlowResponseSchema.safeParse(await readJsonBody(res))
  if (!parsed.success) {
    throw new LinkStartError(
      `${origin} is not a Meshwork server (its answer to /api/auth/start-flow is not a device link)`,
    )
  }
  const flow: StartFlowResponse = parsed.data
  options.onApproveUrl(flow.approve_url, flow)

  const now = options.now ?? Date.now
  const expiresAt = Date.parse(flow.expires_at)
  const body = { state_token: flow.state_token, device_secret: flow.device_secret }
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
  for (;;) {
    // The coordinator should end an expired flow itself; this guards against one that never does.
    if (Number.isFinite(expiresAt) && now() > expiresAt + 30_000) {
      throw new LinkExpiredError('The authorization request expired')
    }
    const polledAt = now()
    let res: Response
    try {
      res = await post('/api/auth/wait-flow', body)
    } catch (err) {
      if (signal?.aborted) throw err
      // A dropped long poll is normal (proxies, restarts): ask again until the flow expires.
      if (Number.isFinite(expiresAt) && now() > expiresAt) {
        throw new LinkExpiredError('The authorization request expired', { cause: err })
      }
      await sleep(options.retryDelayMs ?? 1000)
      continue
    }
    if (!res.ok) {
      const message = await errorMessage(res)
      if (/denied/i.test(message)) throw new LinkDeniedError(message)
      // 429: the coordinator holds a few polls per flow at once, and one dropped on the way may
      // still be held there for its 25 s: ask again.
      if (res.status >= 500 || res.status === 429) {
        await sleep(options.retryDelayMs ?? 1000)
        continue
      }
      throw new LinkExpiredError(message || 'The authorization request expired')
    }
    const answer = waitFlowResponseSchema.parse(await readJsonBody(res))
    if (answer.status === 'approved') {
      return { nodeId: answer.node_id, credential: answer.credential }
    }
    const wait = (options.minPollIntervalMs ?? 1000) - (now() - polledAt)
    if (wait > 0) await sleep(wait)
  }
}

/** The PocketBase-shaped error's `message`, or the HTTP status when there is none. */
async function errorMessage(res: Response): Promise<string> {
  const body = (await readJsonBody(res)) as { message?: unknown } | null
  return typeof body?.message === 'string' && body.message
    ? body.message
    : `The server answered HTTP ${res.status}`
}
