/**
 * Slow readers: a peer that opens a stream (a realtime stream, a node's socket) and then reads it
 * slowly or never (its TCP receive window never drains) while the coordinator keeps writing. What
 * the coordinator has written and the kernel has not taken stays in the process, per connection;
 * it must stay bounded, and a connection past the bound is cut (a realtime client reconnects, the
 * SDK does so by itself; a node's jobs go elsewhere as for any disconnect). Measured on the
 * coordinator's side of the connection (the server socket's `writableLength`, the node socket's
 * `bufferedAmount`), not timed.
 */
import net from 'node:net'
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REALTIME_BUFFER_LIMIT } from '../../src/apis/realtime.ts'
import { NODE_SEND_BUFFER_LIMIT } from '../../src/core/nodes/node-session.ts'
import { createAsServer, modelId } from '../fixtures.ts'
import { signUp, startTestServer, type TestServer } from '../harness.ts'
import { hostileNode, trickle } from '../support/hostile-node.ts'
import { adjustBalance, expectAuditPasses, txsOf } from '../support/ledger.ts'
import { postJson, servingNode, waitUntil } from '../support/network.ts'
import { postSubscriptions } from '../support/sse.ts'

/** The coordinator's side of each connection, by the client's port, with the most bytes it held. */
function watchServerSockets(server: TestServer) {
  const sockets = new Map<number, { socket: net.Socket; maxBuffered: number }>()
  server.http.on('connection', (socket: net.Socket) => {
    const seen = { socket, maxBuffered: 0 }
    sockets.set(socket.remotePort!, seen)
    const write = socket.write.bind(socket) as (...args: unknown[]) => boolean
    socket.write = ((...args: unknown[]) => {
      const ok = write(...args)
      seen.maxBuffered = Math.max(seen.maxBuffered, socket.writableLength)
      return ok
    }) as typeof socket.write
  })
  return (client: net.Socket) => sockets.get(client.localPort!)!
}

/**
 * GET /api/realtime on a raw socket, read up to PB_CONNECT; `read` false: never read after it
 * (the socket is paused, so the kernel's buffers fill and stay full).
 */
async function rawStream(server: TestServer, read: boolean) {
  const socket = net.connect(server.port, '127.0.0.1')
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write('GET /api/realtime HTTP/1.1\r\nHost: meshwork\r\n\r\n')
  let text = ''
  const clientId = await new Promise<string>((resolve) => {
    socket.on('data', (data: Buffer) => {
      text += data.toString('latin1')
      const id = /"clientId":"([^"]+)"/.exec(text)?.[1]
      if (id) resolve(id)
    })
  })
  socket.removeAllListeners('data')
  if (read) socket.on('data', () => {})
  else socket.pause()
  return { socket, clientId }
}

describe('slow readers', () => {
  let server: TestServer
  let serverSide: ReturnType<typeof watchServerSockets>
  beforeAll(async () => {
    // Partial answers go out every millisecond (50 ms in production): the same bytes, sooner.
    server = await startTestServer(
      'sqlite',
      {},
      { network: { scheduler: { streamIntervalMs: 1 } } },
    )
    serverSide = watchServerSockets(server)
  })
  afterAll(async () => server.stop())

  const uid = (pb: PocketBase) => pb.authStore.record!.id

  it('a realtime stream that is never read is cut once the coordinator holds its bound', async () => {
    const pb = await signUp(server, 'reader')
    await adjustBalance(server, uid(pb), 10_000) // the hold of a long prompt
    const stories = await modelId(server)
    // Its own node (free), streaming a character a millisecond: every partial event is the whole
    // row, the 30,000-character prompt included (about 30 kB an event).
    const { node } = await hostileNode(server, stories, pb)
    node.behaviour = trickle(1, 30_000)
    const stalled = await rawStream(server, false)
    const reading = await rawStream(server, true)
    try {
      for (const s of [stalled, reading]) {
        const sub = await postSubscriptions(
          server.url,
          s.clientId,
          ['requests'],
          pb.authStore.token,
        )
        expect(sub.status).toBe(204)
      }
      const conversation = await pb
        .collection('conversations')
        .create({ title: 'x', user: uid(pb) })
      const sent = await postJson(
        server,
        '/api/chat/send',
        { conversation_id: conversation.id, model_id: stories, prompt: 'p'.repeat(30_000) },
        pb.authStore.token,
      )
      expect(sent.status).toBe(200)
      const coordinator = serverSide(stalled.socket)
      // Before the bound, the bytes piled up without end: stop looking at twice the bound.
      await waitUntil(
        () =>
          coordinator.socket.destroyed ||
          coordinator.socket.writableLength > 2 * REALTIME_BUFFER_LIMIT,
        20_000,
        'the stalled stream cut, or its buffer past twice the bound',
      )
      expect(coordinator.maxBuffered).toBeLessThan(REALTIME_BUFFER_LIMIT + 1024 * 1024)
      expect(coordinator.socket.destroyed).toBe(true)
      // Its client is gone from the hub (its subscriptions and its count with it).
      await waitUntil(() => !server.hub.get(stalled.clientId), 5000, 'the stalled client closed')
      // The stream that reads got the same events, more than the bound, and is still open.
      const reader = serverSide(reading.socket)
      expect(reader.socket.destroyed).toBe(false)
      expect(reader.socket.bytesWritten).toBeGreaterThan(REALTIME_BUFFER_LIMIT)
      expect(server.hub.get(reading.clientId)).toBeTruthy()
    } finally {
      node.kill()
      stalled.socket.destroy()
      reading.socket.destroy()
    }
  })

  it('a node that never reads its socket is disconnected once the coordinator holds its bound', async () => {
    const stories = await modelId(server)
    const { owner, node } = await servingNode(server, stories)
    // A catalogue of 40 models with long names stands in for time: every desired_state frame
    // lists them all (about 50 kB), so the owner's toggles reach the bound in a second, not in
    // minutes of small frames (one toggle of a 3-model node is a 300-byte frame).
    const extra: Array<{ id: string }> = []
    for (let i = 0; i < 40; i++) {
      const model = await createAsServer(server, 'models', {
        name: `m${i}-${'n'.repeat(1000)}`,
        file_name: `m${i}.gguf`,
        sha256: 'a'.repeat(64),
        file_size_bytes: 1000,
      })
      extra.push(
        await owner.collection('node_models').create({ node: node.nodeId, model: model.id }),
      )
    }
    const session = server.network.registry.local(node.nodeId)!
    let maxBuffered = 0
    const send = session.ws.send.bind(session.ws)
    session.ws.send = ((...args: Parameters<typeof send>) => {
      send(...args)
      maxBuffered = Math.max(maxBuffered, session.ws.bufferedAmount)
    }) as typeof send
    // The node stops reading: its kernel buffers fill, then the coordinator's.
    ;(node.ws as unknown as { _socket: net.Socket })._socket.pause()
    let on = false
    const toggles = async () => {
      while (
        server.network.registry.local(node.nodeId) === session &&
        maxBuffered < 2 * NODE_SEND_BUFFER_LIMIT
      ) {
        on = !on
        await owner.collection('node_models').update(extra[0].id, { requested_serving: on })
      }
    }
    try {
      await Promise.all([toggles(), toggles(), toggles(), toggles()])
      expect(maxBuffered).toBeLessThan(NODE_SEND_BUFFER_LIMIT + 1024 * 1024)
      // Gone as for any disconnect: another socket of the node may connect.
      await waitUntil(() => session.ws.readyState === session.ws.CLOSED, 5000, 'the socket closed')
      expect(server.network.registry.local(node.nodeId)).toBeUndefined()
    } finally {
      node.kill()
    }
  })

  it('a /v1 stream never read holds no more than its answer, cut at the output budget (already so)', async () => {
    const pb = await signUp(server, 'caller')
    const stories = await modelId(server)
    const { node } = await hostileNode(server, stories)
    // The node sends 10 MB for a 256-token answer, as fast as it can.
    node.behaviour = async (job, n) => {
      n.accept(job)
      for (let i = 0; i < 1000; i++) n.chunk(job, 'word '.repeat(2000))
      n.done(job, 256)
    }
    const keys = await fetch(`${server.url}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: pb.authStore.token },
      body: JSON.stringify({ name: 'k' }),
    })
    const { key } = (await keys.json()) as { key: string }
    const socket = net.connect(server.port, '127.0.0.1')
    socket.on('error', () => {})
    await new Promise((resolve) => socket.once('connect', resolve))
    const body = JSON.stringify({
      model: 'stories260K',
      stream: true,
      messages: [{ role: 'user', content: 'Hello' }],
    })
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: meshwork\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    )
    socket.pause()
    try {
      const row = await waitUntil(
        async () => {
          const r = await server.core.database.db
            .selectFrom('requests')
            .selectAll()
            .where('user', '=', uid(pb))
            .executeTakeFirst()
          return r?.status === 'completed' && r
        },
        10_000,
        'the answer settled',
      )
      // Charged as if it had been read: the whole answer, which the node did produce.
      expect(Number(row.tokens_output)).toBe(256)
      const debits = (await txsOf(server, uid(pb))).filter(
        (t) => t.type === 'debit_inference_request',
      )
      expect(debits).toHaveLength(1)
      // All the coordinator ever wrote to the caller: the answer's events, a few kB.
      await waitUntil(() => serverSide(socket).socket.bytesWritten > 0, 5000, 'the answer written')
      expect(serverSide(socket).socket.bytesWritten).toBeLessThan(64 * 1024)
      await expectAuditPasses(server)
    } finally {
      node.kill()
      socket.destroy()
    }
  })
})

/**
 * A plain answer (not a stream) is written whole at once: a client that asks for megabytes and
 * never reads them left them in the process for as long as it kept the connection open (Node has
 * no write timeout). A connection whose client takes no bytes for the write deadline is cut; one
 * that reads slowly, but reads, gets its whole answer however long it takes.
 */
describe('answers never read', () => {
  let server: TestServer
  let serverSide: ReturnType<typeof watchServerSockets>
  const stallMs = 2500
  let token: string
  beforeAll(async () => {
    server = await startTestServer('sqlite', {}, { writeStallMs: stallMs })
    serverSide = watchServerSockets(server)
    const pb = await signUp(server, 'hoarder')
    token = pb.authStore.token
    const model = await modelId(server)
    const conversation = await pb.collection('conversations').create({ model, title: 'big' })
    // Ten answers of 700 kB: a page of 7 MB, more than loopback's buffers take.
    for (let i = 0; i < 10; i++)
      await createAsServer(server, 'requests', {
        user: pb.authStore.record!.id,
        conversation: conversation.id,
        model,
        prompt: 'p',
        response: `${i}`.repeat(700_000),
        status: 'completed',
      })
  })
  afterAll(async () => server.stop())

  /** Asks for the page of ten answers on a raw socket, and reads nothing yet. */
  async function askForThePage() {
    const socket = net.connect(server.port, '127.0.0.1')
    socket.on('error', () => {})
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.pause()
    socket.write(
      `GET /api/collections/requests/records?perPage=10 HTTP/1.1\r\nHost: meshwork\r\nAuthorization: ${token}\r\n\r\n`,
    )
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    await waitUntil(() => serverSide(socket)?.socket.writableLength > 0, 5000, 'the answer written')
    return { socket, closed }
  }

  it('a page of megabytes its client never reads is cut after the write deadline', async () => {
    const { socket, closed } = await askForThePage()
    const coordinator = serverSide(socket)
    expect(coordinator.maxBuffered).toBeGreaterThan(5_000_000)
    const asked = Date.now()
    await waitUntil(() => coordinator.socket.destroyed, 4 * stallMs, 'the stalled answer cut')
    expect(Date.now() - asked).toBeGreaterThanOrEqual(stallMs)
    // Reading now, the client finds its answer cut short.
    let received = 0
    socket.on('data', (data: Buffer) => (received += data.length))
    socket.resume()
    await closed
    expect(received).toBeLessThan(7_000_000)
  })

  it('a client that reads in bursts, longer in all than the deadline, gets its whole answer', async () => {
    const { socket, closed } = await askForThePage()
    let cut = false
    void closed.then(() => (cut = true))
    // 2 MB a second: the page takes about four seconds, more than the deadline, while the
    // coordinator sees its bytes taken within every deadline.
    const started = Date.now()
    let received = 0
    let burst = 0
    let last = ''
    socket.on('data', (data: Buffer) => {
      received += data.length
      burst += data.length
      last = data.toString('latin1').slice(-1)
      if (burst >= 2_000_000) socket.pause()
    })
    while (last !== '}' || received < 7_000_000) {
      expect(cut, `cut after ${received} bytes`).toBe(false)
      burst = 0
      socket.resume()
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
    expect(Date.now() - started).toBeGreaterThan(stallMs)
    expect(serverSide(socket).socket.destroyed).toBe(false)
    socket.destroy()
  })
})
