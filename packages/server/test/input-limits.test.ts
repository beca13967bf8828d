/**
 * Every input has a bound checked at the edge, before any other work: text lengths (e-mail,
 * identity, password, ids, tokens, prompts, query parameters, path segments), JSON depth and item
 * count, form fields, body size. Each is refused with a 4xx in PocketBase's shape, and what is
 * just inside the bound still works. (bounded-work.test.ts shows the time side.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH, MAX_JSON_ITEMS } from '../src/tools/json-shape.ts'
import { MAX_FORM_FIELDS, MAX_PROMPT_LENGTH, QUERY_LIMITS } from '../src/apis/input-limits.ts'
import { expectApiError, signUp, startTestServer, type TestServer } from './harness.ts'
import { postJson } from './support/network.ts'

describe('input limits', () => {
  let server: TestServer
  let token = ''
  beforeAll(async () => {
    server = await startTestServer('sqlite', {}, { network: { waitFlowTimeoutMs: 50 } })
    token = (await signUp(server)).authStore.token
  })
  afterAll(() => server.stop())

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(server.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: token, ...headers },
      body,
    })
  const conversations = '/api/collections/conversations/records'

  it('refuses an overlong identity or password at sign-in with the field named', async () => {
    for (const [field, body] of [
      ['identity', { identity: `${'a'.repeat(250)}@b.com`, password: 'password123' }],
      ['password', { identity: 'someone@example.com', password: 'p'.repeat(256) }],
    ] as const) {
      const res = await postJson(server, '/api/collections/users/auth-with-password', body)
      expect(res.status, field).toBe(400)
      expect(res.body).toMatchObject({
        status: 400,
        data: { [field]: { code: 'validation_length_too_long' } },
      })
    }
    // 255 characters is still an identity (unknown here, so the usual failure).
    const fits = await postJson(server, '/api/collections/users/auth-with-password', {
      identity: `${'a'.repeat(249)}@b.com`,
      password: 'x',
    })
    expect(fits.status).toBe(400)
    expect(fits.body.message).toBe('Failed to authenticate.')
  })

  it('refuses a sign-up whose e-mail is longer than 255 characters, or shaped to backtrack', async () => {
    const pb = server.client()
    for (const email of [`${'a'.repeat(251)}@b.co`, `a@${'a.'.repeat(400_000)}@`]) {
      const err = await pb
        .collection('users')
        .create({ email, password: 'password123', passwordConfirm: 'password123' })
        .catch((e) => e)
      expect(expectApiError(err).status).toBe(400)
      expect(expectApiError(err).response.data).toMatchObject({
        email: { code: 'validation_is_email' },
      })
    }
    const email = `${'a'.repeat(250)}@b.co`
    await pb
      .collection('users')
      .create({ email, password: 'password123', passwordConfirm: 'password123' })
    expect((await pb.collection('users').authWithPassword(email, 'password123')).record.email).toBe(
      email,
    )
  })

  it('refuses overlong text in record fields, passwords included', async () => {
    const long = await post(conversations, JSON.stringify({ title: 't'.repeat(300_000) }))
    expect(long.status).toBe(400)
    expect(await long.json()).toMatchObject({
      data: { title: { code: 'validation_max_text_constraint' } },
    })
    const pb = await signUp(server)
    const change = await pb
      .collection('users')
      .update(pb.authStore.record!.id, {
        oldPassword: 'o'.repeat(500_000),
        password: 'newpassword1',
        passwordConfirm: 'newpassword1',
      })
      .catch((e) => e)
    expect(expectApiError(change).status).toBe(400)
    expect(expectApiError(change).response.data).toMatchObject({
      oldPassword: { code: 'validation_invalid_old_password' },
    })
  })

  it('refuses overlong ids, tokens and prompts on the network routes', async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      [
        '/api/chat/send',
        { conversation_id: 'c'.repeat(256), model_id: 'm', prompt: 'hi' },
        'conversation_id',
      ],
      [
        '/api/chat/send',
        { conversation_id: 'c', model_id: 'm', prompt: 'p'.repeat(MAX_PROMPT_LENGTH + 1) },
        'prompt',
      ],
      ['/api/requests/retry', { request_id: 'r'.repeat(256) }, 'request_id'],
      ['/api/requests/cancel', { request_id: 'r'.repeat(256) }, 'request_id'],
      [
        '/api/auth/wait-flow',
        { state_token: 's', device_secret: 'd'.repeat(100_000) },
        'device_secret',
      ],
      ['/api/auth/complete-flow', { state_token: 's'.repeat(256) }, 'state_token'],
      ['/api/auth/start-flow', { device_name: 'd'.repeat(256) }, 'device_name'],
    ]
    for (const [path, body, field] of cases) {
      const res = await postJson(server, path, body, token)
      expect(res.status, path).toBe(400)
      expect(res.body.data, path).toMatchObject({ [field]: { code: 'validation_length_too_long' } })
    }
    const prompt = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: 'c', model_id: 'm', prompt: 'p'.repeat(MAX_PROMPT_LENGTH + 1) },
      token,
    )
    expect(prompt.body.message).toBe(`Prompt is too long (at most ${MAX_PROMPT_LENGTH} characters)`)
  })

  it('refuses JSON nested deeper than the limit, and takes the limit itself', async () => {
    const nested = (depth: number) =>
      `{"title":"x","deep":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`
    const ok = await post(conversations, nested(MAX_JSON_DEPTH))
    expect(ok.status).toBe(200)
    for (const depth of [MAX_JSON_DEPTH + 1, 50_000]) {
      const res = await post(conversations, nested(depth))
      expect(res.status, String(depth)).toBe(400)
      expect(await res.json()).toEqual({
        status: 400,
        message: `The submitted JSON is nested too deeply (at most ${MAX_JSON_DEPTH} levels).`,
        data: {},
      })
    }
    // Brackets inside strings are text, not nesting.
    const inString = await post(conversations, JSON.stringify({ title: '['.repeat(200) }))
    expect(inString.status).toBe(200)
  })

  it('refuses JSON with more items than the limit', async () => {
    const keys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":1`).join(',')}}`
    expect((await post(conversations, keys(MAX_JSON_ITEMS - 1))).status).toBe(200)
    const res = await post(conversations, keys(MAX_JSON_ITEMS + 1))
    expect(res.status).toBe(400)
    expect((await res.json()).message).toBe(
      `The submitted JSON has too many items (at most ${MAX_JSON_ITEMS}).`,
    )
  })

  it('refuses form bodies with too many fields, multipart and urlencoded', async () => {
    const urlencoded = new URLSearchParams(
      Array.from({ length: MAX_FORM_FIELDS + 1 }, (_, i) => [`k${i}`, '1']),
    )
    const res1 = await fetch(server.url + conversations, {
      method: 'POST',
      headers: { authorization: token },
      body: urlencoded,
    })
    expect(res1.status).toBe(400)
    const form = new FormData()
    for (let i = 0; i <= MAX_FORM_FIELDS; i++) form.append(`k${i}`, '1')
    const res2 = await fetch(server.url + conversations, {
      method: 'POST',
      headers: { authorization: token },
      body: form,
    })
    expect(res2.status).toBe(400)
    expect((await res2.json()).message).toBe(
      `The submitted form has too many fields (at most ${MAX_FORM_FIELDS}).`,
    )
    // A small form still works, with a JSON payload part and inferred values.
    const small = new FormData()
    small.append('@jsonPayload', JSON.stringify({ title: 'From a form' }))
    const res3 = await fetch(server.url + conversations, {
      method: 'POST',
      headers: { authorization: token },
      body: small,
    })
    expect(res3.status).toBe(200)
    expect((await res3.json()).title).toBe('From a form')
  })

  it('refuses overlong query parameters and path segments before routing', async () => {
    for (const [name, max] of Object.entries(QUERY_LIMITS)) {
      const res = await fetch(`${server.url}${conversations}?${name}=${'a'.repeat(max + 1)}`, {
        headers: { authorization: token },
      })
      expect(res.status, name).toBe(400)
      expect((await res.json()).message).toBe(
        `The ${name} parameter is too long (at most ${max} characters).`,
      )
    }
    const res = await fetch(`${server.url}${conversations}/${'a'.repeat(256)}`, {
      headers: { authorization: token },
    })
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ status: 404, data: {} })
  })
})
