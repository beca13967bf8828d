/**
 * Frames from a hostile coordinator: however large or malformed, they cost the owner's machine a
 * bounded amount of memory and one short log line, and never end the agent.
 */
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { WebSocketServer, type WebSocket } from 'ws'
import { NodeConnection, type CloseInfo } from './node-connection.ts'

const sampling = {
  temperature: 0.7,
  top_p: 0.9,
  top_k: 40,
  repeat_penalty: 1.1,
  frequency_penalty: 0,
  presence_penalty: 0,
  max_tokens: 256,
  context_length: 8000,
}

/** A coordinator that sends `frames` to each connection as it opens. */
async function startCoordinator(frames: string[]) {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await new Promise<void>((r) => wss.once('listening', () => r()))
  let connections = 0
  const closeCodes: number[] = []
  wss.on('connection', (ws: WebSocket) => {
    connections++
    ws.on('close', (code) => closeCodes.push(code))
    for (const f of frames) ws.send(f)
  })
  return {
    url: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    connections: () => connections,
    closeCodes,
    close: () => {
      for (const c of wss.clients) c.terminate()
      return new Promise<void>((r) => wss.close(() => r()))
    },
  }
}

function connect(server: string) {
  const invalid: Error[] = []
  const closes: CloseInfo[] = []
  const connection = new NodeConnection({
    server,
    authorization: 'Bearer n.c',
    onOpen: () => {},
    onFrame: () => {},
    onClose: (info) => closes.push(info),
    onUnauthorized: () => {},
    onReplaced: () => {},
    onInvalidFrame: (err) => invalid.push(err),
    initialBackoffMs: 10,
    maxBackoffMs: 20,
  })
  connection.start()
  return { connection, invalid, closes }
}

async function until(condition: () => boolean, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > end) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('NodeConnection against a hostile coordinator', () => {
  let cleanup: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const c of cleanup) await c()
    cleanup = []
  })

  it('reports a malformed frame in one short line, however many of its parts are wrong', async () => {
    // Every message wrong twice over: zod's full report of such a frame ran to 40 MB per MB.
    const messages = Array.from({ length: 20_000 }, () => ({ role: 'x', content: 1 }))
    const offer = { type: 'job_offer', job_id: 'j', request_id: 'r', model_id: 'm', sampling }
    const coordinator = await startCoordinator([JSON.stringify({ ...offer, prompt: { messages } })])
    const { connection, invalid } = connect(coordinator.url)
    cleanup.push(() => connection.stop(), coordinator.close)
    await until(() => invalid.length === 1)
    expect(invalid[0].message).toMatch(/^Unknown or malformed frame: /)
    expect(invalid[0].message.length).toBeLessThan(300)
  })

  it('refuses a frame of more than 100,000 values before validating it', async () => {
    const messages = Array.from({ length: 200_000 }, () => ({ role: 'x', content: 1 }))
    const offer = { type: 'job_offer', job_id: 'j', request_id: 'r', model_id: 'm', sampling }
    const coordinator = await startCoordinator([
      JSON.stringify({ ...offer, prompt: { messages } }),
      `{"type":"x","deep":${'['.repeat(90_000)}${']'.repeat(90_000)}}`,
    ])
    const { connection, invalid } = connect(coordinator.url)
    cleanup.push(() => connection.stop(), coordinator.close)
    await until(() => invalid.length === 2)
    expect(invalid[0].message).toBe('Frame of more than 100000 values')
    // Nested 90,000 deep: counted without recursion, refused as a frame of no known type.
    expect(invalid[1].message).toMatch(/^Unknown or malformed frame: type: /)
  })

  it('closes the socket on a frame over 16 MiB without reading it, and connects again', async () => {
    const huge = JSON.stringify({ type: 'job_cancel', job_id: 'x'.repeat(17 * 2 ** 20) })
    const coordinator = await startCoordinator([huge])
    const { connection, invalid, closes } = connect(coordinator.url)
    cleanup.push(() => connection.stop(), coordinator.close)
    await until(() => coordinator.connections() >= 2)
    // 1009: the agent said "message too big" and hung up; then it came back.
    expect(coordinator.closeCodes[0]).toBe(1009)
    expect(closes[0].reconnectInMs).not.toBeNull()
    expect(invalid).toHaveLength(0)
  })
})
