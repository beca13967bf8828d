/**
 * @module The node WebSocket (NODE_WS_PATH) on the coordinator's HTTP server: the upgrade is
 * authenticated with the node's credential (`Bearer <node_id>.<secret>`), a wrong, revoked or
 * missing one is refused with 401 before any frame; accepted sockets go to the node registry.
 */
import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { WebSocketServer } from 'ws'
import { NODE_WS_PATH } from '@meshwork/protocol'
import type { Database } from '../db/database.ts'
import { verifyNodeAuthorization } from '../core/nodes/node-credentials.ts'
import type { NodeRegistry } from '../core/nodes/node-registry.ts'

export function attachNodeGateway(
  http: Server,
  database: Database,
  registry: NodeRegistry,
): () => void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4 * 1024 * 1024 })
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // The HTTP server has taken its error listener off an upgraded socket: until ws adds its own,
    // a client resetting the connection (while its credential is checked, or as it is refused)
    // would raise an 'error' with no listener, an uncaught exception that ends the process.
    const onSocketError = () => socket.destroy()
    socket.on('error', onSocketError)
    if ((req.url ?? '').split('?')[0] !== NODE_WS_PATH) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
      return
    }
    verifyNodeAuthorization(database.db, req.headers.authorization)
      .then((nodeId) => {
        if (!nodeId) {
          socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
          return
        }
        socket.off('error', onSocketError)
        wss.handleUpgrade(req, socket, head, (ws) => registry.attach(nodeId, ws))
      })
      .catch(() =>
        socket.end(
          'HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
        ),
      )
  }
  http.on('upgrade', onUpgrade)
  return () => {
    http.off('upgrade', onUpgrade)
    for (const ws of wss.clients) ws.terminate()
    wss.close()
  }
}
