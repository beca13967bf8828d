/**
 * A child process of bench/records holding a share of the realtime subscribers, so that receiving
 * 10,000 streams does not all fall on the parent's event loop. Each stream is a raw TCP
 * connection (no HTTP client, no EventSource): the bytes are searched for the bench's event
 * titles (`"title":"rt-<n>"`) without decoding or parsing frames, so the client's cost per event
 * is a buffer search and the figure measures the server.
 * Protocol with the parent (IPC): it sends {url, token, topic, count}; this process answers
 * {ready} once every stream is subscribed, then on {stop} answers {arrivals} (per event index,
 * the wall-clock times in ms at which it reached each stream) and exits.
 */
import { connect, type Socket } from 'node:net'

interface Start {
  url: string
  token: string
  topic: string
  count: number
}

const marker = Buffer.from('"title":"rt-')
const connectMarker = Buffer.from('"clientId":"')
const frameEnd = Buffer.from('\n\n')
/** Wall-clock ms with sub-ms precision, comparable across processes on one machine. */
const now = () => performance.timeOrigin + performance.now()

const arrivals: number[][] = []
const sockets: Socket[] = []

function record(index: number, at: number) {
  ;(arrivals[index] ??= []).push(at)
}

/** Opens one stream and subscribes it; resolves once the subscription is set. */
function open(start: Start): Promise<void> {
  const { hostname, port } = new URL(start.url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    sockets.push(socket)
    socket.setNoDelay(true)
    socket.write(
      `GET /api/realtime HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n\r\n`,
    )
    let connected = false
    // Bytes after the last complete frame, kept only when a frame was cut between two reads.
    let rest: Buffer | null = null
    socket.on('data', (chunk: Buffer) => {
      const at = now()
      const data = rest ? Buffer.concat([rest, chunk]) : chunk
      rest = null
      if (!connected) {
        const i = data.indexOf(connectMarker)
        const end = i === -1 ? -1 : data.indexOf(34, i + connectMarker.length) // '"'
        if (end === -1) {
          rest = data
          return
        }
        connected = true
        const clientId = data.toString('latin1', i + connectMarker.length, end)
        subscribe(start, clientId).then(resolve, reject)
        return
      }
      let from = 0
      for (;;) {
        const i = data.indexOf(marker, from)
        if (i === -1) break
        let n = 0
        let j = i + marker.length
        let c: number
        while (j < data.length && (c = data[j]) >= 48 && c <= 57) {
          n = n * 10 + c - 48
          j++
        }
        if (j >= data.length) {
          rest = data.subarray(i)
          return
        }
        record(n, at)
        from = j
      }
      // A frame cut between two reads (rare: each server write holds whole frames): keep what
      // follows the last complete frame and was not counted yet.
      const cut = Math.max(from, data.lastIndexOf(frameEnd) + 2)
      if (data.length - cut > 2) rest = Buffer.from(data.subarray(cut))
    })
    socket.on('error', () => {})
  })
}

async function subscribe(start: Start, clientId: string) {
  const res = await fetch(start.url + '/api/realtime', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: start.token },
    body: JSON.stringify({ clientId, subscriptions: [start.topic] }),
  })
  if (!res.ok) throw new Error(`subscribe: ${res.status} ${await res.text()}`)
}

async function start(m: Start) {
  try {
    for (let i = 0; i < m.count; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, m.count - i) }, () => open(m)))
    }
    process.send!({ kind: 'ready' })
  } catch (err) {
    process.send!({ kind: 'failed', message: String(err) })
  }
}

process.on('message', (m: { kind: string } & Partial<Start>) => {
  if (m.kind === 'start') void start(m as Start)
  else if (m.kind === 'stop') {
    for (const socket of sockets) socket.destroy()
    process.send!({ kind: 'arrivals', arrivals }, () => process.exit(0))
  }
})
