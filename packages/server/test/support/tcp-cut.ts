/**
 * @module A TCP forwarder the test controls, put between the coordinator and PostgreSQL or Redis,
 * so a test can really cut the connection (close the listener and every open socket) and later
 * restore it on the same port, or stall it: every connection stays open and no byte goes through
 * either way (a partition, a frozen host), until the test resumes or cuts it.
 */
import { createServer, connect, type Server, type Socket } from 'node:net'

export interface TcpCut {
  port: number
  /** `url` with its host and port replaced by this forwarder's. */
  through(url: string): string
  /** Stops accepting and drops every forwarded connection (stalled ones and their held bytes too). */
  cut(): Promise<void>
  /** Accepts again, on the same port, and forwards (no longer stalled). */
  restore(): Promise<void>
  /**
   * Forwards nothing more, either way, on the open connections and on new ones (still accepted,
   * as a frozen host's kernel does); nothing is closed. What is sent meanwhile waits. `answers`
   * holds only what the server sends: what the client sends still arrives (a statement runs, its
   * answer is lost).
   */
  stall(which?: 'both' | 'answers'): void
  /** Forwards what waited during the stall, and everything after. */
  resume(): void
  readonly stalled: boolean
  close(): Promise<void>
}

export async function startTcpCut(targetHost: string, targetPort: number): Promise<TcpCut> {
  const sockets = new Set<Socket>()
  /** The forwarder's connections to the target: what they read is the server's answers. */
  const upstreams = new WeakSet<Socket>()
  let server: Server | null = null
  let port = 0
  let stalled: false | 'both' | 'answers' = false
  const holds = (s: Socket) => stalled === 'both' || (stalled === 'answers' && upstreams.has(s))
  // Bytes are read as they come; during a stall a socket is paused (what arrives stays in its
  // buffers and the kernel's, so its peer sees a connection that answers nothing), and a write the
  // other side cannot take yet pauses the reader until it drains.
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      if (to.write(chunk)) return
      from.pause()
      to.once('drain', () => {
        if (!holds(from)) from.resume()
      })
    })
    from.on('end', () => to.end())
  }
  const listen = async () => {
    stalled = false
    for (const s of sockets) s.resume()
    if (server) return
    server = createServer((client) => {
      const upstream = connect(targetPort, targetHost)
      upstreams.add(upstream)
      for (const s of [client, upstream]) {
        sockets.add(s)
        s.on('close', () => sockets.delete(s))
        s.on('error', () => {
          client.destroy()
          upstream.destroy()
        })
      }
      forward(client, upstream)
      forward(upstream, client)
      for (const s of [client, upstream]) if (holds(s)) s.pause()
    })
    const listening = server
    await new Promise<void>((resolve) => listening.listen(port, '127.0.0.1', resolve))
    port = (listening.address() as { port: number }).port
  }
  const cut = async () => {
    if (!server) return
    const closing = server
    server = null
    const closed = new Promise((resolve) => closing.close(resolve))
    for (const s of sockets) s.destroy()
    await closed
  }
  await listen()
  return {
    get port() {
      return port
    },
    get stalled() {
      return stalled !== false
    },
    through(url) {
      const u = new URL(url)
      u.hostname = '127.0.0.1'
      u.port = String(port)
      return u.toString()
    },
    cut,
    restore: listen,
    stall(which = 'both') {
      stalled = which
      for (const s of sockets) if (holds(s)) s.pause()
    },
    resume() {
      stalled = false
      for (const s of sockets) s.resume()
    },
    close: cut,
  }
}
