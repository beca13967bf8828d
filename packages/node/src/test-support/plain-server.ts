/**
 * @module plain-server
 * Test helper: some other web server, answering 404 to everything (WebSocket upgrades included),
 * as a wrong --server URL would.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export async function startPlainServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.writeHead(404).end('Not Found'))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}
