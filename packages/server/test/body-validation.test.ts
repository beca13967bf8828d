/**
 * Bodies of the chat, link-flow and sign-in calls are checked with zod at the HTTP edge: wrong
 * types, missing fields and oversized values are a 4xx in PocketBase's error shape
 * (`{status, message, data}`), in the spec's words where it gives them, never a 500; a guest is
 * answered 401 before its body is looked at. Validation does not depend on the database: SQLite.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, startTestServer, type TestServer } from './harness.ts'
import { postJson } from './support/network.ts'

const TEMPERATURE = 'Temperature must be a number between 0 and 2.'
const VALIDATION = 'An error occurred while validating the submitted data.'
const invalid = { code: 'validation_invalid_value', message: 'Invalid value.' }
const blank = { code: 'validation_required', message: 'Cannot be blank.' }

describe('request bodies validated at the HTTP edge', () => {
  let server: TestServer
  let pb: PocketBase
  beforeAll(async () => {
    server = await startTestServer('sqlite')
    pb = await signUp(server, 'validator')
  })
  afterAll(() => server.stop())

  const post = (path: string, body: unknown, token: string | undefined = pb.authStore.token) =>
    postJson(server, path, body, token)
  const expectError = async (
    path: string,
    body: unknown,
    message: string,
    data: Record<string, unknown> = {},
  ) => {
    const res = await post(path, body)
    expect(res, JSON.stringify(body)).toEqual({ status: 400, body: { status: 400, message, data } })
  }

  const send = { conversation_id: 'c'.repeat(15), model_id: 'm'.repeat(15), prompt: 'Hello' }

  it('chat send: each wrong or missing field in the spec words, temperature first', async () => {
    const path = '/api/chat/send'
    await expectError(path, { ...send, temperature: 'hot' }, TEMPERATURE)
    await expectError(path, { ...send, temperature: 2.5 }, TEMPERATURE)
    await expectError(path, { ...send, temperature: -1, conversation_id: 7 }, TEMPERATURE)
    await expectError(path, { ...send, conversation_id: 7 }, 'Conversation ID is required')
    await expectError(path, { ...send, conversation_id: null }, 'Conversation ID is required')
    await expectError(path, { ...send, model_id: ['m'] }, 'Model ID is required')
    await expectError(path, { ...send, prompt: { text: 'Hello' } }, 'Prompt is required')
    await expectError(path, { ...send, prompt: ' \n\t ' }, 'Prompt is required')
    await expectError(path, {}, 'Conversation ID is required')
  })

  it('chat send and retry: a guest is answered 401 whatever its body', async () => {
    for (const path of ['/api/chat/send', '/api/chat/quote', '/api/requests/retry']) {
      const res = await post(path, { temperature: 'hot', request_id: 5 }, '')
      expect(res.status, path).toBe(401)
      expect(res.body).toMatchObject({ status: 401, data: {} })
    }
  })

  it('chat quote: the model is required, other wrong types name their field', async () => {
    const path = '/api/chat/quote'
    await expectError(path, {}, 'Model ID is required')
    await expectError(path, { model_id: 42 }, 'Model ID is required')
    await expectError(path, { model_id: 'm', temperature: true }, TEMPERATURE)
    await expectError(path, { model_id: 'm', conversation_id: 42 }, VALIDATION, {
      conversation_id: invalid,
    })
    await expectError(path, { model_id: 'm', prompt: ['a'] }, VALIDATION, { prompt: invalid })
  })

  it('retry, regenerate and cancel: a request id that is missing or not text', async () => {
    for (const path of ['/api/requests/retry', '/api/chat/regenerate', '/api/requests/cancel']) {
      await expectError(path, {}, 'Request ID is required')
      await expectError(path, { request_id: '' }, 'Request ID is required')
      await expectError(path, { request_id: 12345 }, 'Request ID is required')
      await expectError(path, { request_id: { id: 'x' } }, 'Request ID is required')
    }
    const long = await post('/api/requests/cancel', { request_id: 'r'.repeat(1000) })
    expect(long).toMatchObject({
      status: 400,
      body: { status: 400, data: { request_id: { code: 'validation_length_too_long' } } },
    })
  })

  it('link flow: a state token that is missing or not text; a status or error that is not text', async () => {
    for (const path of ['/api/auth/complete-flow', '/api/auth/flow-info']) {
      await expectError(path, {}, 'Missing authorization token')
      await expectError(path, { state_token: 99 }, 'Missing authorization token')
      await expectError(path, { state_token: ['t'] }, 'Missing authorization token')
    }
    await expectError('/api/auth/complete-flow', { state_token: 't', status: 0 }, VALIDATION, {
      status: invalid,
    })
    await expectError(
      '/api/auth/complete-flow',
      { state_token: 't', status: 'failed', error: { why: 'no' } },
      VALIDATION,
      { error: invalid },
    )
  })

  it('sign-in: identity and password that are missing or not text are blank, together', async () => {
    const path = '/api/collections/users/auth-with-password'
    await expectError(path, {}, VALIDATION, { identity: blank, password: blank })
    await expectError(path, { identity: 42, password: true }, VALIDATION, {
      identity: blank,
      password: blank,
    })
    await expectError(path, { identity: 'a@example.com', password: '' }, VALIDATION, {
      password: blank,
    })
    const long = await post(path, { identity: 'a'.repeat(300), password: 'secret12' })
    expect(long).toMatchObject({
      status: 400,
      body: { status: 400, data: { identity: { code: 'validation_length_too_long' } } },
    })
  })
})
