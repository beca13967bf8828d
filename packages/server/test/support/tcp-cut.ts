/**
 * @module A TCP forwarder the test controls, put between the coordinator and PostgreSQL or Redis,
 * so a test can really cut the connection (close the listener and every open socket) and later
 * restore it on the same port.
 */
import { createServer, connect, type Server, type Socket } from 'node:net'

export interface TcpCut {
  port: number
  /** `url` with its host and port replaced by this forwarder's. */
  through(url: string): string
  /** Stops accepting and drops every forwarded connection. */
  cut(): Promise<void>
  /** Accepts again, on the same port. */
  restore(): Promise<void>
  close(): Promise<void>
}

export async function startTcpCut(targetHost: string, targetPort: number): Promise<TcpCut> {
  const sockets = new Set<Socket>()
  let server: Server | null = null
  let port = 0
  const listen = async () => {
    if (server) return
    server = createServer((client) => {
      const upstream = connect(targetPort, targetHost)
      for (const s of [client, upstream]) {
        sockets.add(s)
        s.on('close', () => sockets.delete(s))
        s.on('error', () => {
          client.destroy()
          upstream.destroy()
        })
      }
      client.pipe(upstream).pipe(client)
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
    through(url) {
      const u = new URL(url)
      u.hostname = '127.0.0.1'
      u.port = String(port)
      return u.toString()
    },
    cut,
    restore: listen,
    close: cut,
  }
}
