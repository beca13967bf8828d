/**
 * @module A write deadline for HTTP connections: one whose peer takes none of the bytes waiting
 * for it for `stallMs` is cut, as nginx's `send_timeout` does. Node has no such timeout, so an
 * answer its client never reads (a records page of megabytes, a realtime stream under its byte
 * bound, a download) stayed in the process for as long as the client kept the connection open.
 * Progress, not duration, is what counts: a slow reader that takes some bytes within every
 * `stallMs` is never cut, however long its answer takes. Node sockets (WebSocket upgrades) have
 * their own bound (node-session.ts) and are left alone here.
 */
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { log } from '../tools/log.ts'

/** nginx's default `send_timeout`. */
export const WRITE_STALL_MS = 60_000

/** What a socket had flushed when it was last seen making progress. */
interface Stall {
  /** Bytes whose writes completed (handed whole to the kernel). */
  flushed: number
  /** Bytes of the write in progress that the kernel has not taken yet. */
  unsent: number
  since: number
}

/** Watches `http`'s connections until the returned function is called. */
export function cutStalledWrites(http: Server, stallMs = WRITE_STALL_MS): () => void {
  const sockets = new Set<Socket>()
  const stalls = new Map<Socket, Stall>()
  const forget = (socket: Socket) => {
    sockets.delete(socket)
    stalls.delete(socket)
  }
  const onConnection = (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => forget(socket))
  }
  const onUpgrade = (_req: unknown, socket: Socket) => forget(socket)
  http.on('connection', onConnection)
  http.on('upgrade', onUpgrade)

  const sweep = () => {
    const now = Date.now()
    for (const socket of sockets) {
      const waiting = socket.writableLength
      // libuv's queue: a large write the kernel takes part by part shrinks here first.
      const unsent =
        (socket as { _handle?: { writeQueueSize?: number } })._handle?.writeQueueSize ?? 0
      if (waiting === 0 && unsent === 0) {
        stalls.delete(socket)
        continue
      }
      const flushed = socket.bytesWritten - waiting
      const stall = stalls.get(socket)
      if (!stall || flushed > stall.flushed || unsent < stall.unsent) {
        stalls.set(socket, { flushed, unsent, since: now })
        continue
      }
      stall.unsent = unsent
      if (now - stall.since < stallMs) continue
      log.warn(
        { remote: socket.remoteAddress, waiting, stalledMs: now - stall.since },
        'cut a connection whose client took no bytes',
      )
      forget(socket)
      socket.destroy()
    }
  }
  const timer = setInterval(sweep, Math.max(50, Math.min(5000, stallMs / 4)))
  timer.unref()
  return () => {
    clearInterval(timer)
    http.off('connection', onConnection)
    http.off('upgrade', onUpgrade)
  }
}
