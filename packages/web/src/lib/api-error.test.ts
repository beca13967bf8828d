import { ClientResponseError } from 'pocketbase'
import { describe, expect, it } from 'vitest'
import {
  ApiError,
  errorMessage,
  fieldReasons,
  isUnreachable,
  UNREACHABLE_MESSAGE,
} from './api-error.ts'

describe('errorMessage', () => {
  it("words a server that cannot be reached for people, not as 'Failed to fetch'", () => {
    expect(errorMessage(new TypeError('Failed to fetch'), 'x')).toBe(UNREACHABLE_MESSAGE)
    const sdk = new ClientResponseError({
      status: 0,
      originalError: new TypeError('Failed to fetch'),
    })
    expect(sdk.message).toBe('Something went wrong.')
    expect(errorMessage(sdk, 'x')).toBe(UNREACHABLE_MESSAGE)
    expect(errorMessage(new ApiError(502, 'HTTP 502: Bad Gateway'), 'x')).toBe(UNREACHABLE_MESSAGE)
    expect(errorMessage(new ClientResponseError({ status: 503, response: {} }), 'x')).toBe(
      UNREACHABLE_MESSAGE,
    )
  })
  it("keeps the server's own message, and does not take an abort for an outage", () => {
    expect(errorMessage(new ApiError(400, 'Insufficient credits'), 'x')).toBe(
      'Insufficient credits',
    )
    expect(errorMessage(new ApiError(503, 'Draining, try another coordinator'), 'x')).toBe(
      'Draining, try another coordinator',
    )
    expect(isUnreachable(new ClientResponseError({ status: 0, isAbort: true }))).toBe(false)
    expect(errorMessage({}, 'fallback')).toBe('fallback')
  })
})

describe('fieldReasons', () => {
  it("lists the server's per-field reasons with the field's name", () => {
    const err = new ClientResponseError({
      status: 400,
      response: {
        message: 'Failed to create record.',
        data: {
          email: { code: 'validation_not_unique', message: 'Value must be unique.' },
          password: {
            code: 'validation_min_text_constraint',
            message: 'Must be at least 8 character(s).',
          },
        },
      },
    })
    expect(fieldReasons(err)).toEqual([
      'Email: Value must be unique.',
      'Password: Must be at least 8 character(s).',
    ])
    expect(fieldReasons(new ApiError(400, 'x', { prompt: { message: 'Too long.' } }))).toEqual([
      'Prompt: Too long.',
    ])
    expect(fieldReasons(new Error('plain'))).toEqual([])
  })
})
