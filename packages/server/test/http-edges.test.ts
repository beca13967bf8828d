/**
 * The HTTP edges every route shares: browsers on other origins may call the API (CORS), oversized
 * bodies are refused before anything reads them, and U+0000 never reaches the database.
 */
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialects, startTestServer, signUp, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { postJson, servingNode, waitUntil } from './support/network.ts'

describe('HTTP edges', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer('sqlite')
  })
  afterAll(() => server.stop())

  it('allows any origin on reads, writes and errors', async () => {
    const pb = await signUp(server)
    const origin = { Origin: 'https://elsewhere.example' }
    const list = await fetch(`${server.url}/api/collections/conversations/records`, {
      headers: { ...origin, Authorization: pb.authStore.token },
    })
    expect(list.status).toBe(200)
    expect(list.headers.get('access-control-allow-origin')).toBe('*')

    const created = await fetch(`${server.url}/api/collections/conversations/records`, {
      method: 'POST',
      headers: { ...origin, Authorization: pb.authStore.token, 'Content-Type': 'application/json' },
      body: JSON.stringify({ title: 'From elsewhere' }),
    })
    expect(created.status).toBe(200)
    expect(created.headers.get('access-control-allow-origin')).toBe('*')

    const missing = await fetch(`${server.url}/api/collections/nope/records`, { headers: origin })
    expect(missing.status).toBe(404)
    expect(missing.headers.get('access-control-allow-origin')).toBe('*')
  })

  it('answers the preflight with the methods the API takes', async () => {
    const res = await fetch(`${server.url}/api/collections/conversations/records`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://elsewhere.example',
        'Access-Control-Request-Method': 'PATCH',
        'Access-Control-Request-Headers': 'authorization, content-type',
      },
    })
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('access-control-allow-methods')).toContain('PATCH')
    expect(res.headers.get('access-control-allow-headers')).toBe('authorization,content-type')
  })

  it('refuses a body over 1 MiB with 413 and keeps serving', async () => {
    const pb = await signUp(server)
    const res = await fetch(`${server.url}/api/collections/conversations/records`, {
      method: 'POST',
      headers: { Authorization: pb.authStore.token, 'Content-Type': 'application/json' },
      body: new Uint8Array(1024 * 1024 + 1),
    })
    expect(res.status).toBe(413)
    // The rest of the body is not read: the connection closes, and the answer says so.
    expect(res.headers.get('connection')).toBe('close')
    const after = await pb.collection('conversations').getList(1, 1)
    expect(after.totalItems).toBe(0)
  })

  it('counts a chunked body (no declared length): over 1 MiB is a 413, within it is read', async () => {
    const pb = await signUp(server)
    const chunked = (bytes: Uint8Array) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (let at = 0; at < bytes.length; at += 64 * 1024)
            controller.enqueue(bytes.subarray(at, at + 64 * 1024))
          controller.close()
        },
      })
    const post = (body: ReadableStream<Uint8Array>) =>
      fetch(`${server.url}/api/collections/conversations/records`, {
        method: 'POST',
        headers: { Authorization: pb.authStore.token, 'Content-Type': 'application/json' },
        body,
        duplex: 'half',
      } as RequestInit)
    const tooBig = await post(chunked(new Uint8Array(1024 * 1024 + 1).fill(32)))
    expect(tooBig.status).toBe(413)
    const json = JSON.stringify({ title: 'sent in chunks', user: pb.authStore.record!.id })
    const fits = await post(chunked(new TextEncoder().encode(json)))
    expect(fits.status).toBe(200)
    const list = await pb.collection('conversations').getList(1, 5)
    expect(list.items.map((c) => c.title)).toEqual(['sent in chunks'])
  })
})

/**
 * A request trickling in (slowloris): headers or a body that never end. Node's own default held
 * such a connection five minutes with no answer.
 */
describe('requests that never finish arriving', () => {
  const DEADLINE_MS = 1000
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer('sqlite', {}, { requestTimeoutMs: DEADLINE_MS })
  })
  afterAll(() => server.stop())

  /** Writes `head` (and `body`) on a raw socket, then nothing; answers what came back and when. */
  function trickle(head: string, body = ''): Promise<{ reply: string; ms: number }> {
    const { port } = new URL(server.url)
    const started = Date.now()
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write(head + body))
      let reply = ''
      socket.setEncoding('utf8')
      socket.on('data', (d) => (reply += d))
      socket.on('close', () => resolve({ reply, ms: Date.now() - started }))
      socket.on('error', reject)
      setTimeout(() => {
        socket.destroy()
        reject(new Error(`still open after 10 s; got: ${reply}`))
      }, 10_000)
    })
  }

  it('a body that never ends is answered 408 and its connection closed; nothing is written', async () => {
    const pb = await signUp(server)
    const json = JSON.stringify({ title: 'never', user: pb.authStore.record!.id })
    const { reply, ms } = await trickle(
      'POST /api/collections/conversations/records HTTP/1.1\r\nHost: x\r\n' +
        `Authorization: ${pb.authStore.token}\r\nContent-Type: application/json\r\n` +
        'Transfer-Encoding: chunked\r\n\r\n',
      `${json.length.toString(16)}\r\n${json}\r\n`,
    )
    expect(reply).toMatch(/^HTTP\/1\.1 408/)
    expect(ms).toBeGreaterThanOrEqual(DEADLINE_MS)
    expect(ms).toBeLessThan(DEADLINE_MS * 5)
    expect((await pb.collection('conversations').getList(1, 1)).totalItems).toBe(0)
  })

  it('headers that never end are dropped at the deadline too', async () => {
    const { ms } = await trickle('GET /api/health HTTP/1.1\r\nHost: x\r\nX-Slow: 1')
    expect(ms).toBeLessThan(DEADLINE_MS * 5)
  })

  it('a realtime stream the server sends outlives the deadline and still delivers', async () => {
    const pb = await signUp(server)
    const events: string[] = []
    await pb
      .collection('conversations')
      .subscribe('*', (e) => events.push(e.record.title as string))
    await new Promise((r) => setTimeout(r, DEADLINE_MS * 3))
    await pb.collection('conversations').create({ title: 'later', user: pb.authStore.record!.id })
    await waitUntil(() => events.includes('later'), 5_000, 'the event after the deadline')
    await pb.realtime.unsubscribe()
  })
})

/** PostgreSQL cannot store U+0000 in text, so it never reaches the database on either dialect. */
describe.each(dialects)('NUL characters [%s]', (dialect) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(dialect)
  })
  afterAll(() => server.stop())

  it('are refused in bodies and URLs with a 400, and nothing is written', async () => {
    const pb = await signUp(server)
    const headers = { Authorization: pb.authStore.token, 'Content-Type': 'application/json' }
    const base = `${server.url}/api/collections/conversations/records`
    const inBody = await fetch(base, {
      method: 'POST',
      headers,
      body: JSON.stringify({ title: 'a\u0000b' }),
    })
    expect(inBody.status).toBe(400)
    expect(await inBody.json()).toEqual({
      status: 400,
      message: 'Text may not contain NUL characters.',
      data: {},
    })
    const inKey = await fetch(base, {
      method: 'POST',
      headers,
      body: JSON.stringify({ 'title\u0000': 'x' }),
    })
    expect(inKey.status).toBe(400)
    const inForm = await fetch(base, {
      method: 'POST',
      headers: { Authorization: pb.authStore.token },
      body: new URLSearchParams({ title: 'a\u0000b' }),
    })
    expect(inForm.status).toBe(400)
    expect((await pb.collection('conversations').getList(1, 1)).totalItems).toBe(0)

    for (const url of [
      `${base}?filter=${encodeURIComponent('title = "a\u0000"')}`,
      `${base}/abc%00def`,
      `${base}?sort=%00`,
    ]) {
      const res = await fetch(url, { headers })
      expect(res.status, url).toBe(400)
    }
    const send = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: 'x', model_id: 'y', prompt: 'hi\u0000' },
      pb.authStore.token,
    )
    expect(send.status).toBe(400)
  })

  it('are dropped from what a node sends, so its answer is stored and paid for', async () => {
    const stories = await modelId(server)
    const { node } = await servingNode(server, stories)
    node.chunks = ['Hel\u0000lo', ' there\u0000']
    const pb = await signUp(server, 'chatter')
    const conversation = await pb.collection('conversations').create({ title: 'New Chat' })
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conversation.id, model_id: stories, prompt: 'Say hello' },
      pb.authStore.token,
    )
    expect(sent.status).toBe(200)
    const id = sent.body.request_id as string
    const row = await waitUntil(
      async () => {
        const r = await pb.collection('requests').getOne(id)
        return r.status === 'completed' && r
      },
      5000,
      'completed',
    )
    expect(row.response).toBe('Hello there')
    node.kill()
  })
})
