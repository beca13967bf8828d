/**
 * Red team: a `/v1` call waits for its request's record events, and only for those of the process
 * that took the call. Scaled out, another process may end that request: a draining process hands
 * its queue over (an API request cannot be rebuilt elsewhere, so the other process fails it), a
 * survivor takes over the requests of a process whose lease lapsed, a cancel the owner could not
 * hear is ended by the process that took it. The call was never told: it hung, with no byte sent,
 * until the client gave up (the `openai` client then retries: a new request, charged again) or
 * the process closed. PostgreSQL + Redis.
 */
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelId } from '../fixtures.ts'
import { signUp, startPeerServer, startTestServer, type TestServer } from '../harness.ts'
import { balanceOf, expectAuditPasses } from '../support/ledger.ts'
import { postJson, servingNode, waitUntil } from '../support/network.ts'

const redisUrl = process.env.TEST_REDIS_URL
const databaseUrl = process.env.TEST_DATABASE_URL

describe.runIf(redisUrl && databaseUrl)('red team: a /v1 call whose request ends elsewhere', () => {
  let a: TestServer
  let b: TestServer
  beforeAll(async () => {
    a = await startTestServer('postgres', { redisUrl })
    b = await startPeerServer(a, { redisUrl })
  })
  afterAll(async () => {
    await a?.close().catch(() => {})
    await b?.stop()
  })

  it('queued on a draining process: the call is answered (503), not left hanging', async () => {
    const stories = await modelId(a)
    const { node } = await servingNode(a, stories, b)
    node.chunkDelayMs = 400
    const pb = await signUp(a, 'caller')
    const user = pb.authStore.record!.id
    const res = await fetch(new URL('/api/keys', a.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: pb.authStore.token },
      body: JSON.stringify({ name: 'k' }),
    })
    const { key } = (await res.json()) as { key: string }
    // The node's one slot is busy with a chat answer (1.6 s) sent through A.
    const conversation = await pb.collection('conversations').create({ user })
    const first = await postJson(
      a,
      '/api/chat/send',
      { conversation_id: conversation.id, model_id: stories, prompt: 'Hello' },
      pb.authStore.token,
    )
    expect(first.status).toBe(200)
    await waitUntil(() => node.jobs.length === 1, 10_000, 'the first job on the node')
    const client = new OpenAI({
      apiKey: key,
      baseURL: `${a.url}/v1`,
      maxRetries: 0,
      timeout: 20_000,
    })
    const call = client.chat.completions
      .create({ model: 'stories260K', messages: [{ role: 'user', content: 'hi' }] })
      .then(
        (answer) => ({ ok: true as const, answer }),
        (err: unknown) => ({
          ok: false as const,
          err: err as InstanceType<typeof OpenAI.APIError>,
        }),
      )
    await waitUntil(
      async () =>
        (
          await a.core.database.db
            .selectFrom('requests')
            .select('id')
            .where('user', '=', user)
            .where('api_key', '!=', '')
            .execute()
        ).length === 1,
      5000,
      'the /v1 request stored, queued on A',
    )
    const started = Date.now()
    await a.network.drain(30_000)
    // The call is answered soon after its request ended (by B), not when the client gives up.
    const outcome = await call
    const waited = Date.now() - started
    expect(outcome.ok ? 'answered' : outcome.err.constructor.name).not.toBe(
      'APIConnectionTimeoutError',
    )
    expect(waited).toBeLessThan(10_000)
    if (!outcome.ok) expect(outcome.err.status).toBe(503)
    await waitUntil(async () => (await balanceOf(b, user)).held === 0, 10_000, 'nothing held')
    await expectAuditPasses(b)
    node.kill()
  })
})
