/**
 * @module requests
 * zod schemas of the request contract in request-status.ts (the coordinator validates with them).
 */
import { z } from 'zod'
import { REQUEST_STATUSES, type CancelRequestBody } from './request-status.ts'

export const requestStatusSchema = z.enum(REQUEST_STATUSES)

export const cancelRequestBodySchema: z.ZodType<CancelRequestBody> = z.object({
  request_id: z.string(),
})
