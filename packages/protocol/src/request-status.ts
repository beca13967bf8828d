/**
 * @module request-status
 * The inference request's life as clients see it (the `requests` collection's `status`), and the
 * stop-generating call: `POST /api/requests/cancel` (issue 10). One contract for the coordinator
 * and the web app. Plain values, no zod: the web app imports this file alone
 * (`@meshwork/protocol/request-status`), keeping the schemas out of its bundle.
 */

/**
 * `pending` (queued) and `processing` (a node is writing it) are open; the others are ended.
 * `cancelled`: stopped by its owner (or its `/v1` client going away, or its conversation deleted);
 * it keeps the text produced so far and was charged for it.
 */
export const REQUEST_STATUSES = [
  'pending',
  'processing',
  'completed',
  'failed',
  'cancelled',
] as const
export type RequestStatus = (typeof REQUEST_STATUSES)[number]

export const OPEN_REQUEST_STATUSES = [
  'pending',
  'processing',
] as const satisfies readonly RequestStatus[]

/** Whether a request has ended (completed, failed or cancelled): nothing more will change it. */
export function isEndedRequestStatus(status: string): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled'
}

export const CANCEL_REQUEST_PATH = '/api/requests/cancel'

/** `POST /api/requests/cancel`'s body: the caller's own request. */
export interface CancelRequestBody {
  request_id: string
}

/**
 * Its answer: the request as it ended. A request that had already ended is answered unchanged
 * (idempotent). `cost` is in credits.
 */
export interface CancelRequestAnswer {
  request_id: string
  status: RequestStatus
  response: string
  tokens_input: number
  tokens_output: number
  cost: number
}
