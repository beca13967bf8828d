/**
 * @module Errors of the OpenAI-compatible API in OpenAI's shape (`{error: {message, type, param,
 * code}}`), so the official clients raise their own error classes (AuthenticationError,
 * RateLimitError, ...) with our message.
 */

export class OpenAiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
    /** 429: seconds until another call may succeed (the `Retry-After` header). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message)
    this.name = 'OpenAiError'
  }

  toJSON() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } }
  }
}

export const invalidApiKey = () =>
  new OpenAiError(
    401,
    'Incorrect or revoked API key. Create a key on your Profile page and send it as "Authorization: Bearer mw-...".',
    'invalid_request_error',
    'invalid_api_key',
  )

export const invalidBody = (message: string, param: string | null = null) =>
  new OpenAiError(400, message, 'invalid_request_error', param ? 'invalid_value' : null, param)

export const modelNotFound = (model: string) =>
  new OpenAiError(
    404,
    `The model '${model}' does not exist. GET /v1/models lists the models being served.`,
    'invalid_request_error',
    'model_not_found',
    'model',
  )

export const noNodeServing = (model: string) =>
  new OpenAiError(
    503,
    `No node is serving '${model}' right now. Please try again later or choose another model.`,
    'server_error',
    'model_unavailable',
  )

export const insufficientCredits = (message: string) =>
  new OpenAiError(402, message, 'insufficient_quota', 'insufficient_quota')

export const rateLimited = (retryAfterSeconds: number, what: string) =>
  new OpenAiError(
    429,
    `Rate limit reached for ${what}. Please try again in ${retryAfterSeconds}s.`,
    'requests',
    'rate_limit_exceeded',
    null,
    retryAfterSeconds,
  )

export const serverError = (message = 'The server had an error while processing your request.') =>
  new OpenAiError(500, message, 'server_error', null)
