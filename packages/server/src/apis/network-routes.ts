/**
 * @module HTTP routes of the inference network: the device-link flow (start, complete, wait),
 * chat send, quote, regenerate and retry. The node WebSocket is in node-gateway.ts, model downloads in
 * model-download.ts.
 */
import type { Context, Hono } from 'hono'
import {
  CANCEL_REQUEST_PATH,
  cancelRequestBodySchema,
  chatQuoteBodySchema,
  chatSendBodySchema,
  startFlowRequestSchema,
  waitFlowRequestSchema,
} from '@meshwork/protocol'
import { z } from 'zod'
import type { CoreApp } from '../core/app.ts'
import type { Caller } from '../core/records/caller.ts'
import { exactError, InsufficientCreditsError } from '../core/chat/chat-service.ts'
import type { InferenceNetwork } from '../core/network/inference-network.ts'
import { DENIED_MESSAGE } from '../core/nodes/link-flows.ts'
import { ApiError, tooManyRequests, unauthorized } from '../tools/api-error.ts'
import { parseBody, type BodyErrors } from './body-schema.ts'
import { callerOf, clientAddress, clientOrigin } from './caller.ts'
import { limitText, MAX_PROMPT_LENGTH, MAX_SHORT_TEXT } from './input-limits.ts'
import { readBody } from './request-body.ts'

// The answers to bad bodies, in the spec's words (section 5; section 4 for the approve page).
const badTemperature = () => new ApiError(400, 'Temperature must be a number between 0 and 2.')
const noModel = () => exactError(400, 'Model ID is required')
const sendErrors: BodyErrors = {
  fields: {
    temperature: badTemperature,
    conversation_id: () => exactError(400, 'Conversation ID is required'),
    model_id: noModel,
    prompt: () => exactError(400, 'Prompt is required'),
  },
}
const quoteErrors: BodyErrors = {
  fields: { temperature: badTemperature, model_id: noModel },
}
const requestErrors: BodyErrors = {
  fields: { request_id: () => exactError(400, 'Request ID is required') },
}
const flowErrors: BodyErrors = {
  fields: { state_token: () => exactError(400, 'Missing authorization token') },
}

/** The approve page's calls: a flow's state token (complete-flow: and the user's answer). */
const flowInfoBodySchema = z.object({ state_token: z.string().min(1) })
const completeFlowBodySchema = flowInfoBodySchema.extend({
  /** `failed`: the user denied it; anything else approves. */
  status: z.string().optional(),
  /** Why it was denied, shown to the node. */
  error: z.string().optional(),
})

export function bindNetworkRoutes(app: Hono, core: CoreApp, network: InferenceNetwork) {
  // Sends, regenerates and retries per user per minute (MESHWORK_CHAT_RATE_LIMIT). Counted before
  // the send runs, so parallel sends cannot pass together; a send refused by validation gives its
  // count back (one refused for want of credits does not: its prompt was counted first).
  const chatSends = core.limits.create('chat-send', {
    points: core.config.chatRateLimit ?? 0,
    windowSeconds: 60,
  })
  // Quotes per user per minute: QUOTES_PER_SEND for each send the limit allows, a quote weighing
  // one point per QUOTE_POINT_CHARS of prompt begun. A quote sends nothing but counts the prompt's
  // tokens on the event loop; the composer asks for one each time typing pauses (350 ms), so honest
  // use needs several per message sent, while a flood of long prompts runs out after a few dozen.
  const chatQuotes = core.limits.create('chat-quote', {
    points: (core.config.chatRateLimit ?? 0) * QUOTES_PER_SEND,
    windowSeconds: 60,
  })
  // A guest is answered 401 before its body is looked at.
  const signedIn = async (c: Context): Promise<Caller> => {
    const caller = await callerOf(c, core.auth)
    if (!caller.auth) throw unauthorized()
    return caller
  }
  const limitedSend = async <T>(caller: Caller, send: () => Promise<T>): Promise<T> => {
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) return send() // answers 401
    const taken = await chatSends.take(user)
    if (!taken.allowed) throw tooManyRequests(taken.retryAfterMs)
    try {
      return await send()
    } catch (err) {
      // A refusal for want of credits came after the prompt was counted: it keeps its count.
      if (err instanceof ApiError && err.status < 500 && !(err instanceof InsufficientCreditsError))
        await chatSends.refund(user)
      throw err
    }
  }

  app.post('/api/auth/start-flow', async (c) => {
    const taken = await network.startFlowLimit.take(clientAddress(c))
    if (!taken.allowed) throw tooManyRequests(taken.retryAfterMs)
    const raw = await readBody(c)
    limitText(raw, { device_name: MAX_SHORT_TEXT })
    const body = startFlowRequestSchema.safeParse(raw)
    if (!body.success) throw new ApiError(400, 'Device name is required.')
    return c.json(await network.flows.start(body.data.device_name, publicBase(c)))
  })

  app.post('/api/auth/complete-flow', async (c) => {
    const body = await readBody(c)
    limitText(body, { state_token: MAX_SHORT_TEXT, status: MAX_SHORT_TEXT, error: MAX_SHORT_TEXT })
    const input = parseBody(completeFlowBodySchema, body, flowErrors)
    // The signed-in user comes from the token, never from `user_info` in the body.
    const caller = await callerOf(c, core.auth)
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) throw unauthorized()
    if (input.status === 'failed') {
      await network.flows.deny(input.state_token, user, input.error || DENIED_MESSAGE)
      return c.json({ status: 'failed', message: 'Authorization denied' })
    }
    const node = await network.flows.approve(input.state_token, user)
    return c.json({ status: 'approved', ...node })
  })

  // The approve page's device label, from the flow itself (signed-in users only, as the page).
  app.post('/api/auth/flow-info', async (c) => {
    const body = await readBody(c)
    limitText(body, { state_token: MAX_SHORT_TEXT })
    const input = parseBody(flowInfoBodySchema, body, flowErrors)
    const caller = await callerOf(c, core.auth)
    if (!caller.auth) throw unauthorized()
    return c.json(await network.flows.describe(input.state_token))
  })

  app.post('/api/auth/wait-flow', async (c) => {
    const raw = await readBody(c)
    limitText(raw, { state_token: MAX_SHORT_TEXT, device_secret: MAX_SHORT_TEXT })
    const body = waitFlowRequestSchema.safeParse(raw)
    if (!body.success) throw new ApiError(400, 'Invalid authorization request.')
    return c.json(
      await network.flows.wait(
        body.data.state_token,
        body.data.device_secret,
        network.waitFlowTimeoutMs,
      ),
    )
  })

  app.post('/api/chat/send', async (c) => {
    const body = await readBody(c)
    limitText(body, { conversation_id: MAX_SHORT_TEXT, model_id: MAX_SHORT_TEXT })
    limitText(
      body,
      { prompt: MAX_PROMPT_LENGTH },
      `Prompt is too long (at most ${MAX_PROMPT_LENGTH} characters)`,
    )
    const caller = await signedIn(c)
    // Validated inside the rate limit: a refused body gives its count back, as any 4xx.
    return c.json(
      await limitedSend(caller, () =>
        network.chat.send(caller, parseBody(chatSendBodySchema, body, sendErrors)),
      ),
    )
  })

  // The most a message can cost before it is sent (the hold a send would take). Its prompt is
  // bounded as a send's: counting it with a model's tokenizer runs on the event loop, and grows
  // faster than its length (300,000 CJK characters, within the body limit, froze the coordinator
  // for about a minute).
  app.post('/api/chat/quote', async (c) => {
    const body = await readBody(c)
    limitText(body, { conversation_id: MAX_SHORT_TEXT, model_id: MAX_SHORT_TEXT })
    limitText(
      body,
      { prompt: MAX_PROMPT_LENGTH },
      `Prompt is too long (at most ${MAX_PROMPT_LENGTH} characters)`,
    )
    const caller = await signedIn(c)
    const taken = await chatQuotes.take(String(caller.auth!.id), quoteWeight(body.prompt))
    if (!taken.allowed) throw tooManyRequests(taken.retryAfterMs)
    return c.json(
      await network.chat.quote(caller, parseBody(chatQuoteBodySchema, body, quoteErrors)),
    )
  })

  // A new answer to the conversation's last message (docs/web.md, "Regenerate"): a new request,
  // so it counts as a send (uncounted, it let a user past the limit one conversation at a time).
  app.post('/api/chat/regenerate', async (c) => {
    const body = await readBody(c)
    limitText(body, { request_id: MAX_SHORT_TEXT })
    const caller = await signedIn(c)
    return c.json(
      await limitedSend(caller, () =>
        network.chat.regenerate(caller, parseBody(cancelRequestBodySchema, body, requestErrors)),
      ),
    )
  })

  // Stop generating (issue 10): owner only; idempotent; an ended request is left as it is.
  app.post(CANCEL_REQUEST_PATH, async (c) => {
    const body = await readBody(c)
    limitText(body, { request_id: MAX_SHORT_TEXT })
    const caller = await signedIn(c)
    return c.json(
      await network.chat.cancel(caller, parseBody(cancelRequestBodySchema, body, requestErrors)),
    )
  })

  app.post('/api/requests/retry', async (c) => {
    const body = await readBody(c)
    limitText(body, { request_id: MAX_SHORT_TEXT })
    const caller = await signedIn(c)
    return c.json(
      await limitedSend(caller, () =>
        network.chat.retry(caller, parseBody(cancelRequestBodySchema, body, requestErrors)),
      ),
    )
  })
}

/** Quotes a user may ask for per send the chat limit allows (MESHWORK_CHAT_RATE_LIMIT). */
export const QUOTES_PER_SEND = 10
/** A quote's prompt weighs one point per this many characters begun (a full prompt: 8). */
export const QUOTE_POINT_CHARS = 4000

function quoteWeight(prompt: unknown): number {
  return typeof prompt === 'string' ? Math.max(1, Math.ceil(prompt.length / QUOTE_POINT_CHARS)) : 1
}

/** The origin the caller used (behind trusted proxies only, from their headers), so the approve
 * URL opens the same web app. */
function publicBase(c: Context): string {
  const origin = clientOrigin(c)
  return `${origin.proto}://${origin.host}`
}
