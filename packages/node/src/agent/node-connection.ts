/**
 * @module node-connection
 * The node's one outbound WebSocket to the coordinator, reconnecting with exponential backoff and
 * full jitter. Frames are validated with the protocol's zod schemas in both directions.
 */
import WebSocket from 'ws'
import { describeNetworkError } from './network-errors.ts'
import {
  NODE_REPLACED_CLOSE_CODE,
  NODE_WS_PATH,
  serverToNodeFrameSchema,
  type NodeToServerFrame,
  type ServerToNodeFrame,
} from '@meshwork/protocol'

export interface NodeConnectionOptions {
  /** Coordinator base URL (http/https); the socket goes to ws(s)://host/api/nodes/ws. */
  server: string
  authorization: string
  onOpen: () => void
  onFrame: (frame: ServerToNodeFrame) => void
  onClose: (info: CloseInfo) => void
  /** The coordinator refused the credential (HTTP 401/403 on upgrade); no reconnect follows. */
  onUnauthorized: (status: number) => void
  /**
   * A newer connection with this node's credential replaced this one (close code
   * NODE_REPLACED_CLOSE_CODE): another machine or another copy of the agent. No reconnect follows:
   * two copies reconnecting would take the node from each other for ever.
   */
  onReplaced: () => void
  /** A frame that is not valid JSON or not a known frame; it is dropped. */
  onInvalidFrame: (error: Error) => void
  initialBackoffMs?: number
  maxBackoffMs?: number
  random?: () => number
}

export interface CloseInfo {
  code: number
  reason: string
  reconnectInMs: number | null
  /** The socket never opened: why, in words ('connection refused', 'not a Meshwork server ...'). */
  cause?: string
}

/**
 * The largest frame the agent reads. An honest coordinator's largest is a job offer whose prompt
 * it fitted to the model's context window (a megabyte or two for 128k tokens); a larger one closes
 * the socket (1009) before it is held or parsed, and the agent connects again.
 */
const MAX_FRAME_BYTES = 16 * 2 ** 20

/**
 * The most JSON values (objects, arrays, strings, numbers...) a frame may hold; a job offer of a
 * thousand messages holds a few thousand. Validating costs zod about 1 kB per wrong part: a 16 MiB
 * frame wrong in every part took 1.5 GB before it was refused. Counted first, it costs nothing.
 */
const MAX_FRAME_VALUES = 100_000

/** A frame from the coordinator failed validation. */
export class InvalidFrameError extends Error {
  override name = 'InvalidFrameError'
}

/** `ws(s)://host/api/nodes/ws` for a coordinator base URL. */
export function nodeSocketUrl(server: string): string {
  const url = new URL(NODE_WS_PATH, server)
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:'
  return url.toString()
}

export class NodeConnection {
  readonly #o: NodeConnectionOptions
  #ws: WebSocket | null = null
  #attempt = 0
  #timer: NodeJS.Timeout | null = null
  #stopped = false

  constructor(options: NodeConnectionOptions) {
    this.#o = options
  }

  get connected(): boolean {
    return this.#ws?.readyState === WebSocket.OPEN
  }

  start(): void {
    this.#connect()
  }

  /** Sends a frame when connected; false when the socket is not open (the frame is dropped). */
  send(frame: NodeToServerFrame): boolean {
    if (!this.#ws || this.#ws.readyState !== WebSocket.OPEN) return false
    this.#ws.send(JSON.stringify(frame))
    return true
  }

  /** Closes the socket for good. */
  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    const ws = this.#ws
    if (!ws || ws.readyState === WebSocket.CLOSED) return
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve())
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate()
      else ws.close(1000, 'node stopping')
      setTimeout(() => (ws.terminate(), resolve()), 2000).unref()
    })
  }

  #connect(): void {
    if (this.#stopped) return
    const ws = new WebSocket(nodeSocketUrl(this.#o.server), {
      headers: { authorization: this.#o.authorization },
      handshakeTimeout: 10_000,
      maxPayload: MAX_FRAME_BYTES,
    })
    this.#ws = ws
    let refused = false
    let opened = false
    let cause: string | undefined
    ws.on('open', () => {
      opened = true
      this.#attempt = 0
      this.#o.onOpen()
    })
    ws.on('message', (data, isBinary) => {
      if (isBinary) return this.#o.onInvalidFrame(new InvalidFrameError('Binary frame'))
      let parsed: unknown
      try {
        parsed = JSON.parse(String(data))
      } catch (err) {
        return this.#o.onInvalidFrame(new InvalidFrameError('Frame is not JSON', { cause: err }))
      }
      if (holdsMoreValues(parsed, MAX_FRAME_VALUES)) {
        return this.#o.onInvalidFrame(
          new InvalidFrameError(`Frame of more than ${MAX_FRAME_VALUES} values`),
        )
      }
      const frame = serverToNodeFrameSchema.safeParse(parsed)
      if (!frame.success) {
        // The first problem only: zod's whole report of a frame wrong in every part is about 40
        // times its size (past V8's longest string, a throw that ended the agent).
        const [first] = frame.error.issues
        const more = frame.error.issues.length - 1
        return this.#o.onInvalidFrame(
          new InvalidFrameError(
            `Unknown or malformed frame: ${first.path.join('.') || 'frame'}: ${first.message}` +
              (more > 0 ? ` (and ${more} more problems)` : ''),
          ),
        )
      }
      this.#o.onFrame(frame.data)
    })
    ws.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0
      res.resume()
      if (status === 401 || status === 403) {
        refused = true
        this.#stopped = true
        this.#o.onUnauthorized(status)
      } else {
        // Something answers HTTP there, but not the node WebSocket: a wrong URL or another app.
        cause = `not a Meshwork server (it answered HTTP ${status} to ${NODE_WS_PATH})`
      }
      ws.terminate()
    })
    // Connection errors are followed by 'close', where the reconnect is scheduled.
    ws.on('error', (err) => {
      if (!opened) cause ??= describeNetworkError(err)
    })
    ws.on('close', (code, reason) => {
      if (this.#ws === ws) this.#ws = null
      const replaced = code === NODE_REPLACED_CLOSE_CODE && !this.#stopped
      if (replaced) this.#stopped = true
      const delay = this.#stopped || refused ? null : this.#nextDelay()
      this.#o.onClose({
        code,
        reason: reason.toString(),
        reconnectInMs: delay,
        ...(opened || refused ? {} : { cause: cause ?? 'connection closed before it opened' }),
      })
      if (replaced) this.#o.onReplaced()
      if (delay !== null) this.#timer = setTimeout(() => this.#connect(), delay)
    })
  }

  #nextDelay(): number {
    const initial = this.#o.initialBackoffMs ?? 500
    const max = this.#o.maxBackoffMs ?? 10_000
    const ceiling = Math.min(max, initial * 2 ** this.#attempt)
    this.#attempt++
    // Full jitter: a coordinator restart does not get every node back in the same millisecond.
    return Math.round(ceiling / 2 + (ceiling / 2) * (this.#o.random ?? Math.random)())
  }
}

/** Whether `value` holds more than `limit` JSON values; a loop, not recursion (any depth). */
function holdsMoreValues(value: unknown, limit: number): boolean {
  const pending: unknown[] = [value]
  for (let count = 0; pending.length > 0;) {
    const v = pending.pop()
    if (++count > limit) return true
    if (v !== null && typeof v === 'object') {
      for (const child of Object.values(v)) pending.push(child)
      if (count + pending.length > limit) return true
    }
  }
  return false
}
