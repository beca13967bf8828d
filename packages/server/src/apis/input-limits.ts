/**
 * @module How much one request may ask of the coordinator, checked at the HTTP edge before any
 * other work (database, hashing, parsing filters): body size and shape, query parameter and path
 * segment lengths, and the length of named text inputs. docs/records-engine.md lists them.
 */
import type { Context } from 'hono'
import { badRequest, notFound, validationError } from '../tools/api-error.ts'
import { maxFilterLength } from '../tools/filter/parser.ts'

/** Largest request body (no route takes files; the longest legitimate body is a chat prompt). */
export const MAX_BODY_BYTES = 1024 * 1024
/** Most fields of one form body (multipart or urlencoded); parsing costs about 25 µs per part. */
export const MAX_FORM_FIELDS = 200
/** Ids, tokens, e-mails, identities, passwords and other short text inputs. */
export const MAX_SHORT_TEXT = 255
/** A chat prompt: the context window (8,000 tokens) at the spec's four characters per token. */
export const MAX_PROMPT_LENGTH = 32_000

/** Longest value of each query parameter the API reads; any other parameter: DEFAULT_QUERY_LIMIT. */
export const QUERY_LIMITS: Readonly<Record<string, number>> = {
  filter: maxFilterLength,
  sort: 2100, // PocketBase: 8 sort fields of at most 255 characters
  expand: 1000,
  fields: 1000,
  page: 20,
  perPage: 20,
  skipTotal: 10,
}
const DEFAULT_QUERY_LIMIT = 1000

/**
 * For every /api/* request, before routing does any work: a path segment longer than any id or
 * name is a 404, an overlong query parameter a 400.
 */
export function checkUrlLimits(c: Context): void {
  checkUrl(c.req.path, c.req.url)
}

/** checkUrlLimits on a request's path and full URL (the record-read shortcut has no Context). */
export function checkUrl(path: string, url: string): void {
  for (const segment of path.split('/')) if (segment.length > MAX_SHORT_TEXT) throw notFound()
  checkQuery(url)
}

/** checkUrl's query half: an overlong query parameter of `url` is a 400. */
export function checkQuery(url: string): void {
  const queryStart = url.indexOf('?')
  if (queryStart !== -1) {
    for (const [name, value] of new URLSearchParams(url.slice(queryStart + 1))) {
      const max = QUERY_LIMITS[name] ?? DEFAULT_QUERY_LIMIT
      if (value.length > max)
        throw badRequest(`The ${name} parameter is too long (at most ${max} characters).`)
    }
  }
}

/**
 * Throws PocketBase's validation error naming every input of `body` whose text is longer than its
 * limit in `limits`. Values that are not strings are left to the route's own validation.
 */
export function limitText(
  body: Record<string, unknown>,
  limits: Readonly<Record<string, number>>,
  message = 'An error occurred while validating the submitted data.',
): void {
  const errors: Record<string, { code: string; message: string; params: { max: number } }> = {}
  for (const [name, max] of Object.entries(limits)) {
    const value = body[name]
    if (typeof value === 'string' && value.length > max) {
      errors[name] = {
        code: 'validation_length_too_long',
        message: `The length must be no more than ${max}.`,
        params: { max },
      }
    }
  }
  if (Object.keys(errors).length === 0) return
  const err = validationError(message, errors)
  // Messages given in the spec's words are sent as written (they have no full stop).
  if (message !== err.message) err.message = message
  throw err
}
