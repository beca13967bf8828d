/**
 * @module The bench's client side: JSON calls, sign-up, the device-link flow and one realtime
 * (SSE) subscription that timestamps each event on arrival.
 */
import { request } from 'node:http'

export async function api(
  url: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<unknown> {
  const res = await fetch(url + path, {
    method: body ? 'POST' : 'GET',
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: token } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
  return res.status === 204 ? null : res.json()
}

let counter = 0

export async function signUp(url: string, name: string): Promise<{ id: string; token: string }> {
  const email = `${name}${Date.now().toString(36)}${counter++}@bench.local`
  await api(url, '/api/collections/users/records', {
    email,
    password: 'password123',
    passwordConfirm: 'password123',
  })
  const auth = (await api(url, '/api/collections/users/auth-with-password', {
    identity: email,
    password: 'password123',
  })) as { token: string; record: { id: string } }
  return { id: auth.record.id, token: auth.token }
}

/** Starts a flow, approves it as the token's user, collects the credential. */
export async function linkNode(
  url: string,
  token: string,
  device: string,
): Promise<{ nodeId: string; credential: string }> {
  const flow = (await api(url, '/api/auth/start-flow', { device_name: device })) as {
    state_token: string
    device_secret: string
  }
  await api(url, '/api/auth/complete-flow', { state_token: flow.state_token, user_info: {} }, token)
  const answer = (await api(url, '/api/auth/wait-flow', flow)) as {
    node_id: string
    credential: string
  }
  return { nodeId: answer.node_id, credential: answer.credential }
}

/** How long the dispatch phase waits for one offer or completion: long enough that a slow tail
 * (hundreds of sends in flight on a busy machine) is measured rather than cut off. */
export const WAIT_MS = 120_000

export class BenchTimeoutError extends Error {
  name = 'BenchTimeoutError'
}

/** Polls `check` every `everyMs` (HTTP polls: keep it coarse, the coordinator shares the cores). */
export async function waitFor<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs: number,
  everyMs = 50,
): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > end) throw new BenchTimeoutError('Timed out')
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

/**
 * Waits on in-memory state that changes when events arrive: `notify()` re-checks every waiter,
 * so measured paths are timed on arrival without timers polling in the agent's process.
 */
export class Changes {
  private waiters = new Set<() => void>()

  notify(): void {
    for (const w of [...this.waiters]) w()
  }

  until<T>(check: () => T | undefined | null | false, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(test)
        reject(new BenchTimeoutError('Timed out'))
      }, timeoutMs)
      const test = () => {
        const value = check()
        if (!value) return
        clearTimeout(timer)
        this.waiters.delete(test)
        resolve(value)
      }
      this.waiters.add(test)
      test()
    })
  }
}

/** One SSE connection subscribed to `topic`; resolves (once subscribed) with a stop function. */
export function subscribe(
  url: string,
  token: string,
  topic: string,
  onEvent: (data: string, at: number) => void,
) {
  return new Promise<() => void>((resolve, reject) => {
    const req = request(url + '/api/realtime', { agent: false }, (res) => {
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        const at = performance.now()
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const frame = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const event = /event:(.*)/.exec(frame)?.[1]
          const data = /data:(.*)/.exec(frame)?.[1] ?? ''
          if (event === 'PB_CONNECT') {
            const clientId = /^id:(.*)$/m.exec(frame)![1]
            api(url, '/api/realtime', { clientId, subscriptions: [topic] }, token).then(
              () => resolve(() => req.destroy()),
              reject,
            )
          } else if (event === topic) onEvent(data, at)
        }
      })
    })
    req.on('error', reject)
    req.end()
  })
}
