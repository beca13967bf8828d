/**
 * @module fake-link-server
 * Test helper: the coordinator's device-link endpoints with a scripted outcome.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export type LinkOutcome = 'approve' | 'deny' | 'expire'

export interface FakeLinkServer {
  url: string
  startBodies: unknown[]
  waitCalls: number
  close(): Promise<void>
}

/** Answers 429 `busyPolls` times (the flow's polls all held), `pending` `pendingPolls` times,
 * then the outcome. */
export async function startFakeLinkServer(
  outcome: LinkOutcome,
  pendingPolls = 2,
  busyPolls = 0,
): Promise<FakeLinkServer> {
  const state = { startBodies: [] as unknown[], waitCalls: 0 }
  const json = (res: import('node:http').ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
  const server: Server = createServer((req, res) => {
    let raw = ''
    req.on('data', (c) => (raw += c))
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : {}
      if (req.method === 'POST' && req.url === '/api/auth/start-flow') {
        state.startBodies.push(body)
        return json(res, 200, {
          state_token: 'st_123',
          device_secret: 'ds_456',
          approve_url: `${url}/auth/approve-node?token=st_123&device=${encodeURIComponent(body.device_name)}`,
          expires_at: new Date(Date.now() + 600_000).toISOString(),
        })
      }
      if (req.method === 'POST' && req.url === '/api/auth/wait-flow') {
        if (body.state_token !== 'st_123' || body.device_secret !== 'ds_456') {
          return json(res, 404, { status: 404, message: 'Flow not found.', data: {} })
        }
        state.waitCalls++
        if (state.waitCalls <= busyPolls)
          return json(res, 429, { status: 429, message: 'Too Many Requests.', data: {} })
        if (state.waitCalls <= busyPolls + pendingPolls)
          return json(res, 200, { status: 'pending' })
        if (outcome === 'approve') {
          return json(res, 200, { status: 'approved', node_id: 'node_abc', credential: 'cred_xyz' })
        }
        if (outcome === 'deny') {
          return json(res, 400, { status: 400, message: 'User denied authorization', data: {} })
        }
        return json(res, 410, {
          status: 410,
          message: 'The authorization request expired.',
          data: {},
        })
      }
      json(res, 404, { status: 404, message: 'Not found.', data: {} })
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    get startBodies() {
      return state.startBodies
    },
    get waitCalls() {
      return state.waitCalls
    },
    close: () => new Promise((r) => server.close(() => r())),
  }
}
