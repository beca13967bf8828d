/**
 * @module `/v1`: the OpenAI-compatible API for programs (issue 10), with `Authorization: Bearer
 * <API key>`. Every answer, errors included, is in OpenAI's shape; streams are OpenAI's SSE
 * (`chat.completion.chunk` events, then `data: [DONE]`).
 */
import type { Context, Hono } from 'hono'
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
/** A body must arrive within this (1 MiB at 35 kB/s): Node's own limit is 5 minutes. */
export const BODY_DEADLINE_MS = 30_000

export interface OpenAiRouteOptions {
  /** How long a request body may take to arrive (tests shorten it). */
  bodyDeadlineMs?: number
}

export function bindOpenAiRoutes(
  app: Hono,
  core: CoreApp,
  api: OpenAiApi,
  { bodyDeadlineMs = BODY_DEADLINE_MS }: OpenAiRouteOptions = {},
) {
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
  app.use('/v1/*', (c, next) => (c.req.method === 'OPTIONS' ? preflight(c, next) : next()))

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
      // The key is checked before the body is read, and a refusal closes the connection: a body
      // that never ends (or a slow one) held the connection of a caller with no key for Node's
      // five minutes, read in full before it was told 401.
      const key = await authorize(c).catch((err: unknown) => {
        c.header('Connection', 'close')
        throw err
      })
      const request = parseCompletionRequest(await jsonBody(c, bodyDeadlineMs))
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

/**
 * The body as text, at most MAX_BODY_BYTES (declared or counted as it arrives) and within
 * `deadlineMs`. The unread rest of a body refused is not read: the connection closes after the
 * answer, and says so.
 */
async function readBody(c: Context, deadlineMs: number): Promise<string> {
  const refuse = (err: OpenAiError) => {
    c.header('Connection', 'close')
    return err
  }
  const tooLarge = () => refuse(invalidBody('The request body is too large.'))
  const declared = c.req.header('content-length')
  if (declared && !c.req.header('transfer-encoding') && Number(declared) > MAX_BODY_BYTES)
    throw tooLarge()
  const body = c.req.raw.body
  if (!body) return ''
  const reader = body.getReader()
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          refuse(
            new OpenAiError(
              408,
              `The request body did not arrive within ${Math.round(deadlineMs / 1000)} s.`,
              'invalid_request_error',
              'request_timeout',
            ),
          ),
        ),
      deadlineMs,
    )
  })
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), late]).catch((err: unknown) => {
        if (err instanceof OpenAiError) throw err
        // The client went away mid-body: nobody hears the answer, and it is no server error.
        throw refuse(invalidBody('The request body could not be read.'))
      })
      if (done) break
      size += value.byteLength
      if (size > MAX_BODY_BYTES) throw tooLarge()
      chunks.push(value)
    }
  } catch (err) {
    reader.cancel().catch(() => {})
    throw err
  } finally {
    clearTimeout(timer)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

async function jsonBody(c: Context, deadlineMs: number): Promise<unknown> {
  const text = await readBody(c, deadlineMs)
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
