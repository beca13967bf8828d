/**
 * @module A raw realtime stream, as an attacker (or a client behind a balancer) would open it:
 * GET /api/realtime with fetch, its frames parsed as they come, and POSTs of subscriptions to any
 * process.
 */
import { waitUntil } from './network.ts'

export interface RawStream {
  clientId: string
  /** Every message after PB_CONNECT: the event name (the subscription key) and its JSON. */
  events: Array<{ event: string; data: Record<string, unknown> }>
  /** The server ended the stream. */
  readonly ended: boolean
  /** Resolves with the events once at least `n` arrived. */
  waitFor(n: number, ms?: number): Promise<RawStream['events']>
  close(): Promise<void>
}

/** Opens a stream; rejects with the response (status, body) when it is refused. */
export async function openStream(baseUrl: string): Promise<RawStream> {
  const res = await fetch(`${baseUrl}/api/realtime`)
  if (res.status !== 200)
    throw Object.assign(new Error(`stream refused: ${res.status}`), {
      status: res.status,
      body: await res.json(),
    })
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  const events: RawStream['events'] = []
  let buffer = ''
  let clientId = ''
  let closed = false
  let ended = false
  const connected = new Promise<void>((resolve, reject) => {
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read()
          if (done) {
            ended = true
            break
          }
          buffer += decoder.decode(value, { stream: true })
          let end: number
          while ((end = buffer.indexOf('\n\n')) !== -1) {
            const frame = buffer.slice(0, end)
            buffer = buffer.slice(end + 2)
            const event = /^event:(.*)$/m.exec(frame)?.[1] ?? ''
            const data = JSON.parse(/^data:(.*)$/m.exec(frame)?.[1] ?? 'null')
            if (event === 'PB_CONNECT') {
              clientId = data.clientId
              resolve()
            } else events.push({ event, data })
          }
        }
      } catch (err) {
        if (!closed) reject(err)
      }
    })()
  })
  await connected
  return {
    clientId,
    events,
    get ended() {
      return ended
    },
    waitFor: (n, ms = 5000) =>
      waitUntil(() => events.length >= n && events, ms, `${n} realtime events`),
    async close() {
      closed = true
      await reader.cancel().catch(() => {})
    },
  }
}

/** POST /api/realtime to `baseUrl` (any process); answers the status and the parsed body. */
export async function postSubscriptions(
  baseUrl: string,
  clientId: string,
  subscriptions: string[],
  token = '',
) {
  const res = await fetch(`${baseUrl}/api/realtime`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: token } : {}) },
    body: JSON.stringify({ clientId, subscriptions }),
  })
  const text = await res.text()
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null }
}

/** A subscription key with a filter option, as the SDK builds it. */
export const filtered = (topic: string, filter: string) =>
  `${topic}?options=${encodeURIComponent(JSON.stringify({ query: { filter } }))}`
