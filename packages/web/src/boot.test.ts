import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { takeBoot } from './lib/boot-results.ts'

const b64 = (o: object) => btoa(JSON.stringify(o)).replace(/=+$/, '')
const token = (exp: number) => `${b64({ alg: 'HS256' })}.${b64({ id: 'u1', exp })}.sig`
const later = Math.floor(Date.now() / 1000) + 3600
const conversation = 'abcdefghij12345'

const preloaded = () =>
  [...document.head.querySelectorAll('link[rel="modulepreload"]')].map((l) =>
    l.getAttribute('href'),
  )

async function boot(path: string, session: object | null) {
  document.head.querySelectorAll('link').forEach((l) => l.remove())
  vi.resetModules()
  localStorage.clear()
  if (session) localStorage.setItem('pocketbase_auth', JSON.stringify(session))
  window.history.replaceState(null, '', path)
  await import('./boot.ts')
}

describe('boot.ts', () => {
  let fetchMock: ReturnType<typeof vi.fn>
  beforeEach(() => {
    fetchMock = vi.fn(async () => new Response(JSON.stringify({ items: [] }), { status: 200 }))
    vi.stubGlobal('fetch', fetchMock)
    document.head.innerHTML =
      '<meta name="meshwork-home" content="/assets/chat-page-x.js /assets/copy-x.js">' +
      '<meta name="meshwork-markdown" content="/assets/render-markdown-x.js">'
  })
  afterEach(() => {
    vi.unstubAllGlobals()
    for (const key of ['auth-refresh', `history:${conversation}`, 'conversations:u1', 'models'])
      void takeBoot(key)
  })

  it("asks for an open conversation's first screen, with the stored token, and preloads the chat's code (not markdown)", async () => {
    await boot(`/chat?c=${conversation}`, { token: token(later), record: { id: 'u1' } })
    const calls = fetchMock.mock.calls.map(([url, init]) => [
      String(url).split('?')[0],
      (init as RequestInit).method,
      (init as { headers: Record<string, string> }).headers.Authorization,
    ])
    expect(calls).toEqual([
      ['/api/collections/users/auth-refresh', 'POST', token(later)],
      ['/api/collections/requests/records', 'GET', token(later)],
      ['/api/collections/conversations/records', 'GET', token(later)],
      ['/api/collections/available_models/records', 'GET', token(later)],
    ])
    expect(await takeBoot(`history:${conversation}`)).toEqual({
      ok: true,
      status: 200,
      body: { items: [] },
    })
    expect(takeBoot(`history:${conversation}`)).toBeUndefined()
    // Plain answers render without the markdown renderer; it loads when idle (chat-prefetch.ts).
    expect(preloaded()).toEqual(['/assets/chat-page-x.js', '/assets/copy-x.js'])
  })

  it('asks nothing without a live session, and no history for a malformed conversation id', async () => {
    await boot(`/chat?c=${conversation}`, {
      token: token(Math.floor(Date.now() / 1000) - 10),
      record: { id: 'u1' },
    })
    await boot('/chat', null)
    expect(fetchMock).not.toHaveBeenCalled()
    await boot('/chat?c=..%2F..%2Fusers', { token: token(later), record: { id: 'u1' } })
    expect(fetchMock.mock.calls.map(([url]) => String(url).split('?')[0])).not.toContain(
      '/api/collections/requests/records',
    )
    expect(preloaded()).toEqual(['/assets/chat-page-x.js', '/assets/copy-x.js'])
  })

  it("preloads the chat's code only for the chat (and /, which leads there)", async () => {
    await boot('/login', null)
    expect(preloaded()).toEqual([])
    await boot('/', null)
    expect(preloaded()).toEqual(['/assets/chat-page-x.js', '/assets/copy-x.js'])
  })
})
