/**
 * @module A real coordinator in this process (port 0, SQLite in a temp dir, the built web app),
 * users made over its HTTP API, and records only the server may write made through its core.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { startServer, type RunningServer } from '../../packages/server/src/server.ts'
import { requireCollection } from '../../packages/server/src/core/collections/registry.ts'
import { server as superuser } from '../../packages/server/src/core/records/caller.ts'
import type { RecordJson } from '../../packages/server/src/core/records/serialize.ts'
import { modelMirror } from '@meshwork/test-kit'
import { agentPackage, webDist } from './web-build.ts'

export { modelMirror, waitUntil } from '@meshwork/test-kit'

export interface Coordinator extends RunningServer {
  stop(): Promise<void>
}

export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    what: string,
  ) {
    super(`${what} answered ${status}: ${JSON.stringify(body)}`)
    this.name = 'ApiCallError'
  }
}

/** Starts a coordinator serving `dist` (the suite's own web build unless told otherwise). */
export async function startCoordinator(dist = webDist): Promise<Coordinator> {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshwork-e2e-'))
  const server = await startServer({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    initialCredits: 1000,
    tokenTtlSeconds: 3600,
    localNode: false,
    modelMirror,
    webDist: dist,
    agentPackage,
  })
  return {
    ...server,
    async stop() {
      await server.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** One JSON call to the API; throws ApiCallError unless 2xx. */
export async function api<T = Record<string, unknown>>(
  server: Coordinator,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<T> {
  const res = await fetch(new URL(path, server.url), {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  const json = text ? JSON.parse(text) : {}
  if (!res.ok) throw new ApiCallError(res.status, json, `${method} ${path}`)
  return json as T
}

export interface TestUser {
  id: string
  email: string
  password: string
  token: string
  record: Record<string, unknown>
}

let userCounter = 0

export async function createUser(server: Coordinator, prefix = 'user'): Promise<TestUser> {
  const email = `${prefix}${Date.now().toString(36)}${userCounter++}@example.com`
  const password = 'password123'
  await api(server, 'POST', '/api/collections/users/records', {
    email,
    password,
    passwordConfirm: password,
  })
  const auth = await api<{ token: string; record: Record<string, unknown> }>(
    server,
    'POST',
    '/api/collections/users/auth-with-password',
    { identity: email, password },
  )
  return { id: auth.record.id as string, email, password, token: auth.token, record: auth.record }
}

/** Opens `path` signed in as `user` (the SDK's stored session, as a real sign-in leaves it). */
export async function openAs(
  page: Page,
  server: Coordinator,
  user: TestUser,
  path: string,
): Promise<void> {
  // A page of the origin that runs no app code: the app, started signed out, would clear the
  // stored session right after we write it.
  await page.goto(`${server.url}/api/health`)
  await page.evaluate(
    ([token, record]) => localStorage.setItem('pocketbase_auth', JSON.stringify({ token, record })),
    [user.token, user.record] as const,
  )
  await page.goto(`${server.url}${path}`)
  // Wait for the start-up session refresh to finish: leaving the page while it is in flight
  // aborts it, and the app treats that as a failed refresh and signs out.
  await page.getByRole('button', { name: 'Account menu' }).waitFor()
}

/** Creates a record as the server itself (collections whose create rule is closed to users). */
export function createAsServer(
  server: Coordinator,
  collection: string,
  body: Record<string, unknown>,
): Promise<RecordJson> {
  return server.core.records.create(superuser, requireCollection(collection), body)
}

export async function modelId(server: Coordinator, name = 'stories260K'): Promise<string> {
  const row = await server.core.database.db
    .selectFrom('models')
    .select('id')
    .where('name', '=', name)
    .executeTakeFirstOrThrow()
  return row.id as string
}

/** A conversation holding `count` completed requests, oldest first, seeded server-side. */
export async function seedConversation(
  server: Coordinator,
  user: TestUser,
  count: number,
  title = 'Seeded Chat',
) {
  const model = await modelId(server)
  const conv = await api<{ id: string }>(
    server,
    'POST',
    '/api/collections/conversations/records',
    { user: user.id, model, title },
    user.token,
  )
  // One second apart, as real turns are: the history is ordered by `created`.
  const start = Date.now() - count * 1000
  for (let i = 1; i <= count; i++) {
    const created = new Date(start + i * 1000).toISOString().replace('T', ' ')
    const request = await createAsServer(server, 'requests', {
      user: user.id,
      conversation: conv.id,
      model,
      prompt: `Question number ${i}`,
      response: `Reply number ${i}: once upon a time there was a **tiny** story.`,
      status: 'completed',
      tokens_input: 4,
      tokens_output: 12,
      processing_time_ms: 40 + (i % 7),
      is_partial: false,
    })
    await server.core.database.db
      .updateTable('requests')
      .set({ created, updated: created })
      .where('id', '=', request.id)
      .execute()
  }
  return conv.id
}
