/**
 * @module The first script of the page: before the app's code (React, router, SDK) has loaded and
 * run, it asks the coordinator for what the first screen needs, so those answers travel in
 * parallel with the code (docs/performance.md, "Web"). Tiny on purpose, and without imports of
 * its own at run time (they would make it wait for more files). It only ever sends the stored
 * session's token to this same origin.
 */
import {
  conversationsListQuery,
  historyListQuery,
  listUrl,
  modelsListQuery,
} from './features/chat/chat-requests.ts'
import { putBoot, type BootResponse } from './lib/boot-results.ts'

interface StoredSession {
  token: string
  userId: string
}

/** The SDK's stored session (localStorage 'pocketbase_auth'), when its token has not expired. */
function storedSession(): StoredSession | null {
  try {
    const stored = JSON.parse(localStorage.getItem('pocketbase_auth') ?? 'null') as {
      token?: unknown
      record?: { id?: unknown } | null
    } | null
    const token = typeof stored?.token === 'string' ? stored.token : ''
    const userId = typeof stored?.record?.id === 'string' ? stored.record.id : ''
    if (!token || !userId) return null
    const payload = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))) as {
      exp?: unknown
    }
    if (typeof payload.exp !== 'number' || payload.exp * 1000 <= Date.now()) return null
    return { token, userId }
  } catch {
    return null
  }
}

function ask(url: string, token: string, method = 'GET'): Promise<BootResponse> {
  return fetch(url, { method, headers: { Authorization: token, Accept: 'application/json' } }).then(
    async (res) => ({
      ok: res.ok,
      status: res.status,
      body: await res.json().catch(() => ({})),
    }),
  )
}

/** Starts fetching the code files index.html names in `<meta name={name}>`. */
function preload(name: string): void {
  const files = document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? ''
  for (const href of files.split(' ').filter(Boolean)) {
    const link = document.createElement('link')
    link.rel = 'modulepreload'
    link.crossOrigin = ''
    link.href = href
    document.head.append(link)
  }
}

// The chat's code (where a visit to / leads too); other pages do without it.
if (location.pathname === '/chat' || location.pathname === '/') preload('meshwork-home')

const session = storedSession()
if (session) {
  putBoot('auth-refresh', ask('/api/collections/users/auth-refresh', session.token, 'POST'))
  if (location.pathname === '/chat') {
    const conversationId = new URLSearchParams(location.search).get('c')
    if (conversationId && /^[a-z0-9]{15}$/.test(conversationId)) {
      putBoot(
        `history:${conversationId}`,
        ask(listUrl('requests', historyListQuery(conversationId, session.userId)), session.token),
      )
      // Its answers mostly render without the markdown renderer (simple-markdown.tsx): the
      // chat loads that when idle, or when an answer needs it.
    }
    putBoot(
      `conversations:${session.userId}`,
      ask(listUrl('conversations', conversationsListQuery(session.userId)), session.token),
    )
    putBoot('models', ask(listUrl('available_models', modelsListQuery), session.token))
  }
}
