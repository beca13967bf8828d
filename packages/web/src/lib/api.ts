/**
 * @module Typed fetch helpers for the coordinator's non-record actions (spec §7).
 * Each call carries the signed-in user's token; failures throw ApiError with the server's
 * PocketBase-shaped message, or 'HTTP {status}: {statusText}' when the body has none.
 */
import type { CancelRequestAnswer } from '@meshwork/protocol/request-status'
import { CANCEL_REQUEST_PATH } from '@meshwork/protocol/request-status'
import { ApiError } from './api-error.ts'
import { pb } from './pb.ts'

export interface SendChatInput {
  conversation_id: string
  model_id: string
  prompt: string
  temperature: number
  /** The client's key for this message: sent again under it, it is not charged twice. */
  idempotency_key?: string
}

export interface SendChatResult {
  request_id: string
  status: 'queued'
  position: number
  /** An earlier send of the same message had stored the request. */
  repeated?: true
}

export interface QuoteInput {
  conversation_id?: string
  model_id: string
  prompt: string
}

/** The most a message can cost before it is sent (the hold a send would take). */
export interface QuoteResult {
  available: number
  estimated_input: number
  /** null when the balance cannot pay even the shortest answer. */
  max_cost: number | null
  output_cap: number
  /** The answer's length limit when the balance is no limit (older servers: absent). */
  max_output?: number
  min_cost: number
}

export interface RetryResult {
  status: string
  message: string
}

/** A service as the Network screen shows it; Redis is 'not_configured' on the embedded bus. */
export type ServiceState = 'online' | 'offline' | 'not_configured'

export interface HealthResult {
  status: string
  /** The spec's booleans. */
  services: { database: boolean; redis: boolean }
  /** Beside them: tells a Redis that is down from one that was never configured. */
  states?: { database?: ServiceState; redis?: ServiceState }
}

export interface ApproveUserInfo {
  id: string
  email: string
  name: string
  credits: number
}

async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  if (pb.authStore.token) headers.Authorization = `Bearer ${pb.authStore.token}`
  const res = await fetch(new URL(path, pb.baseURL).toString(), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  let json: unknown = undefined
  try {
    json = text ? JSON.parse(text) : undefined
  } catch {
    // A non-JSON body (proxy error page) falls through to the generic message below.
  }
  if (!res.ok) {
    const shaped = json as { message?: unknown; data?: unknown } | undefined
    const message =
      shaped && typeof shaped.message === 'string' && shaped.message
        ? shaped.message
        : `HTTP ${res.status}: ${res.statusText}`
    const data = shaped && typeof shaped.data === 'object' && shaped.data ? shaped.data : {}
    throw new ApiError(res.status, message, data as Record<string, unknown>)
  }
  return json as T
}

/** Validates locally (spec §5) and queues a chat message. */
export function sendChat(input: SendChatInput): Promise<SendChatResult> {
  if (!input.conversation_id)
    return Promise.reject(new ApiError(400, 'Conversation ID is required'))
  if (!input.model_id) return Promise.reject(new ApiError(400, 'Model ID is required'))
  return call<SendChatResult>('POST', '/api/chat/send', input)
}

export function quoteMessage(input: QuoteInput): Promise<QuoteResult> {
  return call<QuoteResult>('POST', '/api/chat/quote', input)
}

/** A new answer to the conversation's last message; answers like a send, with the new id. */
export function regenerateAnswer(requestId: string): Promise<SendChatResult> {
  return call<SendChatResult>('POST', '/api/chat/regenerate', { request_id: requestId })
}

export function retryRequest(requestId: string): Promise<RetryResult> {
  return call<RetryResult>('POST', '/api/requests/retry', { request_id: requestId })
}

/** Stop generating: the request ends cancelled with the text so far (idempotent). */
export function cancelRequest(requestId: string): Promise<CancelRequestAnswer> {
  return call<CancelRequestAnswer>('POST', CANCEL_REQUEST_PATH, { request_id: requestId })
}

export function approveNode(stateToken: string, userInfo: ApproveUserInfo): Promise<unknown> {
  return call('POST', '/api/auth/complete-flow', { state_token: stateToken, user_info: userInfo })
}

/** The pending flow as the coordinator knows it: the device name the node itself sent. */
export function getFlowInfo(
  stateToken: string,
): Promise<{ device_name: string; expires_at: string }> {
  return call('POST', '/api/auth/flow-info', { state_token: stateToken })
}

export function denyNode(stateToken: string): Promise<unknown> {
  return call('POST', '/api/auth/complete-flow', {
    state_token: stateToken,
    status: 'failed',
    error: 'User denied authorization',
  })
}

export function getHealth(): Promise<HealthResult> {
  return call<HealthResult>('GET', '/api/system/health')
}
