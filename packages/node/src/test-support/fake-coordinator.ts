/**
 * @module fake-coordinator
 * Test helper: the coordinator's node-facing side (model downloads + node WebSocket) in miniature.
 * Incoming frames are validated with the protocol schema, so the tests also check the agent's wire.
 */
import { WebSocketServer, type WebSocket } from 'ws'
import {
  NODE_WS_PATH,
  nodeAuthorizationHeader,
  nodeToServerFrameSchema,
  type NodeToServerFrame,
  type ServerToNodeFrame,
} from '@meshwork/protocol'
import { startModelFileServer, type ModelFileServer } from './model-file-server.ts'

export interface FakeCoordinator {
  url: string
  files: ModelFileServer
  /** Every frame received, in order, with the index of the connection it came on. */
  frames: { conn: number; frame: NodeToServerFrame }[]
  connections: number
  send(frame: ServerToNodeFrame): void
  /** Drops the current socket without a close handshake. */
  drop(): void
  /** Closes the current socket with `code` (a close handshake). */
  closeWith(code: number, reason: string): void
  waitFor<T extends NodeToServerFrame>(
    match: (f: NodeToServerFrame) => f is T,
    timeoutMs?: number,
  ): Promise<T>
  waitFor(match: (f: NodeToServerFrame) => boolean, timeoutMs?: number): Promise<NodeToServerFrame>
  close(): Promise<void>
}

export async function startFakeCoordinator(
  files: Record<string, Buffer>,
  auth: { nodeId: string; credential: string },
): Promise<FakeCoordinator> {
  const expected = nodeAuthorizationHeader(auth.nodeId, auth.credential)
  const fileServer = await startModelFileServer(files, expected)
  const wss = new WebSocketServer({ noServer: true })
  const frames: FakeCoordinator['frames'] = []
  const waiters = new Set<() => void>()
  let socket: WebSocket | null = null
  let connections = 0

  fileServer.server.on('upgrade', (req, sock, head) => {
    if (req.url !== NODE_WS_PATH || req.headers.authorization !== expected) {
      sock.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n')
      return
    }
    wss.handleUpgrade(req, sock, head, (ws) => {
      const conn = ++connections
      socket = ws
      ws.on('message', (data) => {
        const frame = nodeToServerFrameSchema.parse(JSON.parse(String(data)))
        frames.push({ conn, frame })
        for (const w of [...waiters]) w()
      })
    })
  })

  const waitFor = (match: (f: NodeToServerFrame) => boolean, timeoutMs = 15_000) => {
    const from = frames.length
    return new Promise<NodeToServerFrame>((resolve, reject) => {
      let scanned = from
      const check = () => {
        for (; scanned < frames.length; scanned++) {
          if (match(frames[scanned].frame)) {
            waiters.delete(check)
            clearTimeout(timer)
            return resolve(frames[scanned].frame)
          }
        }
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(new Error('Timed out waiting for a frame'))
      }, timeoutMs)
      waiters.add(check)
      check()
    })
  }

  return {
    url: fileServer.url,
    files: fileServer,
    frames,
    get connections() {
      return connections
    },
    send: (frame) => socket?.send(JSON.stringify(frame)),
    drop: () => socket?.terminate(),
    closeWith: (code, reason) => socket?.close(code, reason),
    waitFor: waitFor as FakeCoordinator['waitFor'],
    close: async () => {
      for (const c of wss.clients) c.terminate()
      wss.close()
      await fileServer.close()
    },
  }
}
