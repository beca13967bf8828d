/**
 * The HTTP edges every route shares: browsers on other origins may call the API (CORS), and
 * oversized bodies are refused before anything reads them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, signUp, type TestServer } from './harness.ts'

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

  it('refuses a body over 32 MiB with 413 and keeps serving', async () => {
    const pb = await signUp(server)
    const res = await fetch(`${server.url}/api/collections/conversations/records`, {
      method: 'POST',
      headers: { Authorization: pb.authStore.token, 'Content-Type': 'application/json' },
      body: new Uint8Array(32 * 1024 * 1024 + 1),
    })
    expect(res.status).toBe(413)
    const after = await pb.collection('conversations').getList(1, 1)
    expect(after.totalItems).toBe(0)
  })
})
