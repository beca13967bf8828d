/**
 * @module Validates a request body with a zod schema at the HTTP edge (the house rule), answering
 * as the API always has: a field with its own error (the spec's words) gets it, checked in the
 * order given; otherwise PocketBase's validation error names every failing field.
 */
import type { z } from 'zod'
import { type ApiError, type FieldError, validationError } from '../tools/api-error.ts'

const invalid: FieldError = { code: 'validation_invalid_value', message: 'Invalid value.' }

export interface BodyErrors {
  /** Per field, in the order they are checked: the error a failing field answers. */
  fields?: Readonly<Record<string, () => ApiError>>
  /** The field error PocketBase's validation error gives each other failing field. */
  other?: FieldError
}

export function parseBody<S extends z.ZodType>(
  schema: S,
  body: unknown,
  errors: BodyErrors = {},
): z.output<S> {
  const parsed = schema.safeParse(body)
  if (parsed.success) return parsed.data
  const failing = new Set(parsed.error.issues.map((issue) => String(issue.path[0] ?? '')))
  for (const [field, error] of Object.entries(errors.fields ?? {}))
    if (failing.has(field)) throw error()
  const fields: Record<string, FieldError> = {}
  for (const field of failing) fields[field] = errors.other ?? invalid
  throw validationError('An error occurred while validating the submitted data.', fields)
}
