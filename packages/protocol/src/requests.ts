/**
 * @module requests
 * zod schemas of the request contract in request-status.ts and of the chat calls' bodies (the
 * coordinator validates with them at its HTTP edge).
 */
import { z } from 'zod'
import { REQUEST_STATUSES, type CancelRequestBody } from './request-status.ts'

export const requestStatusSchema = z.enum(REQUEST_STATUSES)

/** The body of `POST /api/requests/cancel`, `/api/requests/retry` and `/api/chat/regenerate`: one
 * of the caller's own requests. */
export const cancelRequestBodySchema: z.ZodType<CancelRequestBody> = z.object({
  request_id: z.string().min(1),
})

/** A send's temperature (0 to 2); left out or null: the conversation's own. */
const temperatureSchema = z.number().min(0).max(2).nullable().optional()

/** `POST /api/chat/send`'s body (spec section 5). */
export const chatSendBodySchema = z.object({
  conversation_id: z.string().min(1),
  model_id: z.string().min(1),
  prompt: z.string().refine((prompt) => prompt.trim() !== ''),
  temperature: temperatureSchema,
  /**
   * The client's key for this message (its own, per user: letters, digits, '-' and '_'). Sent
   * again under it, after an answer that never came, the message answers the request already
   * stored instead of being charged twice.
   */
  idempotency_key: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .optional(),
})
export type ChatSendBody = z.infer<typeof chatSendBodySchema>

/** `POST /api/chat/quote`'s body: a send's, where only the model is needed (no conversation: no
 * history; no prompt yet: the hold of an empty message). */
export const chatQuoteBodySchema = z.object({
  conversation_id: z.string().default(''),
  model_id: z.string().min(1),
  prompt: z.string().default(''),
  temperature: temperatureSchema,
})
export type ChatQuoteBody = z.infer<typeof chatQuoteBodySchema>
