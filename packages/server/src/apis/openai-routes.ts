/**
 * @module `/v1`: the OpenAI-compatible API for programs (issue 10), with `Authorization: Bearer
 * <API key>`. Every answer, errors included, is in OpenAI's shape; streams are OpenAI's SSE
 * (`chat.completion.chunk` events, then `data: [DONE]`).
 */
import type { Context, Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { cors } from 'hono/cors'
import { streamSSE } from 'hono/streaming'
import type { CoreApp } from '../core/app.ts'
import { identifyApiKey, touchApiKey, type ApiKeyIdentity } from '../core/api-keys/api-keys.ts'
import { parseCompletionRequest } from '../core/openai/completion-request.ts'
import type { Completion, OpenAiApi, Usage } from '../core/openai/completions.ts'
import {
  invalidApiKey,
  invalidBody,
  OpenAiError,
  rateLimited,
  serverError,
} from '../core/openai/openai-error.ts'
import { containsNul } from '../tools/nul.ts'
import { jsonShapeError } from '../tools/json-shape.ts'
import { log } from '../tools/log.ts'

/** Bodies past this are refused: the context window holds about 32,000 characters. */
const MAX_BODY_BYTES = 1024 * 1024

export function bindOpenAiRoutes(app: Hono, core: CoreApp, api: OpenAiApi) {
  // Shared by every process through Redis when configured (tools/rate-limiter.ts).
  const perKey = core.limits.create('api-key', {
    points: core.config.apiKeyRateLimit ?? 0,
    windowSeconds: 60,
  })
  const perUser = core.limits.create('api-user', {
    points: core.config.apiUserRateLimit ?? 0,
    windowSeconds: 60,
  })

  const preflight = cors({
    origin: '*',
    allowMethods: ['GET', 'POST'],
    allowHeaders: ['authorization', 'content-type'],
  })
  // Answered here, not thrown: this runs outside `answer`, and the app's error handler knows
  // only PocketBase's errors (a 500 in the wrong shape). The unread rest of the body is not read:
  // the connection closes after the answer, and says so (as the API's own 413 does).
  const limit = bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: (c) => {
      c.header('Connection', 'close')
      return errorResponse(c, invalidBody('The request body is too large.'))
    },
  })
  app.use('/v1/*', (c, next) => {
    if (c.req.method === 'OPTIONS') return preflight(c, next)
    if (c.req.method === 'POST') return limit(c, next)
    return next()
  })

  /** The caller's key, counted against its own and its user's per-minute limits. */
  const authorize = async (c: Context): Promise<ApiKeyIdentity> => {
    const key = await identifyApiKey(core.database.db, c.req.header('authorization'))
    if (!key) throw invalidApiKey()
    const byKey = await perKey.take(key.id)
    if (!byKey.allowed) throw rateLimited(Math.ceil(byKey.retryAfterMs / 1000), 'this API key')
    const byUser = await perUser.take(key.user)
    if (!byUser.allowed) throw rateLimited(Math.ceil(byUser.retryAfterMs / 1000), 'your account')
    await touchApiKey(core.database.db, key.id)
    return key
  }

  app.get('/v1/models', (c) =>
    answer(c, async () => {
      await authorize(c)
      return c.json(await api.listModels())
    }),
  )

  app.post('/v1/chat/completions', (c) =>
    answer(c, async () => {
      const key = await authorize(c)
      const request = parseCompletionRequest(await jsonBody(c))
      const completion = await api.start(key, request)
      stopWhenGone(c, api, completion.requestId)
      return request.stream ? stream(c, completion, request.includeUsage) : whole(c, completion)
    }),
  )

  app.all('/v1/*', (c) =>
    errorResponse(
      c,
      new OpenAiError(
        404,
        `Unknown endpoint ${c.req.method} ${c.req.path}.`,
        'invalid_request_error',
        'unknown_url',
      ),
    ),
  )
}

/**
 * A client that disconnects or aborts before its answer is whole (streamed or not) stops the job
 * on its node at once, and pays only for what was produced up to then (issue 10). The signal only
 * fires for a connection closed before the response finished.
 */
function stopWhenGone(c: Context, api: OpenAiApi, requestId: string) {
  const signal = c.req.raw.signal
  const stop = () => {
    api
      .stop(requestId)
      .catch((err: unknown) => log.error({ err }, 'stopping an abandoned request failed'))
  }
  if (signal.aborted) stop()
  else signal.addEventListener('abort', stop, { once: true })
}

/** Runs a handler, answering any error in OpenAI's shape (never a stack trace). */
async function answer(c: Context, handler: () => Promise<Response>): Promise<Response> {
  try {
    return await handler()
  } catch (err) {
    if (err instanceof OpenAiError) return errorResponse(c, err)
    log.error({ method: c.req.method, path: c.req.path, err }, 'unhandled error')
    return errorResponse(c, serverError())
  }
}

function errorResponse(c: Context, err: OpenAiError) {
  if (err.retryAfterSeconds !== undefined) c.header('Retry-After', String(err.retryAfterSeconds))
  return c.json(err.toJSON(), err.status as 400)
}

async function jsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text()
  // The shape is checked before parsing, as for the records API (docs/records-engine.md, Limits).
  const shapeError = jsonShapeError(text)
  if (shapeError) throw invalidBody(shapeError)
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw invalidBody('The request body is not valid JSON.')
  }
  if (containsNul(body)) throw invalidBody('Text may not contain NUL characters.')
  return body
}

const completionId = (requestId: string) => `chatcmpl-${requestId}`

async function whole(c: Context, completion: Completion): Promise<Response> {
  for await (const event of completion.events) {
    if (event.type === 'error') throw event.error
    if (event.type !== 'done') continue
    return c.json({
      id: completionId(completion.requestId),
      object: 'chat.completion',
      created: completion.created,
      model: completion.model,
      system_fingerprint: null,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: event.text, refusal: null },
          logprobs: null,
          finish_reason: event.finishReason,
        },
      ],
      usage: event.usage,
    })
  }
  throw serverError('The request ended without an answer.')
}

function stream(c: Context, completion: Completion, includeUsage: boolean): Response {
  c.header('X-Accel-Buffering', 'no')
  return streamSSE(c, async (sse) => {
    const chunk = (delta: object, finishReason: string | null, usage?: Usage | null) =>
      sse.writeSSE({
        data: JSON.stringify({
          id: completionId(completion.requestId),
          object: 'chat.completion.chunk',
          created: completion.created,
          model: completion.model,
          system_fingerprint: null,
          choices: usage ? [] : [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
          ...(includeUsage ? { usage: usage ?? null } : {}),
        }),
      })
    await chunk({ role: 'assistant', content: '' }, null)
    for await (const event of completion.events) {
      if (event.type === 'text') await chunk({ content: event.text }, null)
      else if (event.type === 'error') {
        // Headers are gone: the error travels as an event, which the openai clients raise.
        return sse.writeSSE({ data: JSON.stringify(event.error.toJSON()) })
      } else {
        await chunk({}, event.finishReason)
        if (includeUsage) await chunk({}, null, event.usage)
        return sse.writeSSE({ data: '[DONE]' })
      }
    }
  })
}
