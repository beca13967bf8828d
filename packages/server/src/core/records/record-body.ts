/**
 * @module Turns a client's create/update body into column values: unknown keys and server-managed
 * fields are dropped, `field+`/`field-` modifiers applied, each value cast and validated per its
 * field type. Errors come back per field, in PocketBase's codes.
 */
import type { FieldError } from '../../tools/api-error.ts'
import { parseDate } from '../../tools/dates.ts'
import { isEmail, MAX_EMAIL_LENGTH } from '../../tools/email.ts'
import { recordIdPattern } from '../../tools/ids.ts'
import type { CollectionDef, FieldDef } from '../collections/collection-def.ts'
import type { Row } from './serialize.ts'

export interface BodyOptions {
  mode: 'create' | 'update'
  /** Superusers (the server itself) may write system fields. */
  superuser: boolean
  /** The stored row, for update modifiers. */
  existing?: Row
}

export interface CastBody {
  values: Row
  errors: Record<string, FieldError>
}

/** PocketBase's default limit of a text field declared without `max` (for clients' writes). */
export const DEFAULT_TEXT_MAX = 5000
/** Any other field's value as text (ids, numbers, dates, select values, e-mails). */
const OTHER_MAX = MAX_EMAIL_LENGTH

export function castRecordBody(collection: CollectionDef, body: Row, opts: BodyOptions): CastBody {
  const values: Row = {}
  const errors: Record<string, FieldError> = {}
  for (const field of collection.fields) {
    if (!isWritable(field, opts)) continue
    const raw = resolveModifiers(field, body, opts.existing)
    if (raw === undefined) continue
    // Length first: no later check (parsing a date or a number, the e-mail check) sees more.
    const tooLong = lengthError(field, raw, opts.superuser)
    if (tooLong) {
      errors[field.name] = tooLong
      continue
    }
    const cast = castValue(field, raw)
    if ('error' in cast) errors[field.name] = cast.error
    else values[field.name] = cast.value
  }
  if (opts.mode === 'create' && body.id !== undefined && body.id !== '') {
    if (typeof body.id !== 'string' || !recordIdPattern.test(body.id)) {
      errors.id = { code: 'validation_invalid_format', message: 'Invalid value format.' }
    } else values.id = body.id
  }
  return { values, errors }
}

function lengthError(field: FieldDef, raw: unknown, superuser: boolean): FieldError | null {
  const text = Array.isArray(raw) ? raw[raw.length - 1] : raw
  if (typeof text !== 'string') return null
  const isText = field.type === 'text' || field.type === 'password'
  // The server writes long text (prompts, answers) into fields that clients cannot write.
  const max = isText ? (field.max ?? (superuser ? Infinity : DEFAULT_TEXT_MAX)) : OTHER_MAX
  if (text.length <= max) return null
  if (field.type === 'email') return invalidEmail
  return {
    code: 'validation_max_text_constraint',
    message: `Must be less than ${max} character(s).`,
    params: { max },
  }
}

function isWritable(field: FieldDef, opts: BodyOptions): boolean {
  if (field.type === 'autodate' || field.type === 'password') return false
  if (field.hidden && !opts.superuser) return false
  if (field.system && !opts.superuser) return false
  if (field.immutable && opts.mode === 'update' && !opts.superuser) return false
  return true
}

/** `n+: 2` adds to a number, `n-: 2` subtracts; a plain key replaces. */
function resolveModifiers(field: FieldDef, body: Row, existing?: Row): unknown {
  const plain = body[field.name]
  const plus = body[`${field.name}+`] ?? body[`+${field.name}`]
  const minus = body[`${field.name}-`]
  if (plus === undefined && minus === undefined) return plain
  if (field.type !== 'number') return plus ?? plain
  // In the API's units: a scaled field's stored value is converted back first.
  const stored = Number(existing?.[field.name] ?? 0)
  const base = plain !== undefined ? Number(plain) : field.scale ? stored / field.scale : stored
  return base + Number(plus ?? 0) - Number(minus ?? 0)
}

type Cast = { value: unknown } | { error: FieldError }

const invalidEmail: FieldError = {
  code: 'validation_is_email',
  message: 'Must be a valid email address.',
}
const invalid: Cast = {
  error: { code: 'validation_invalid_format', message: 'Invalid value format.' },
}

export function castValue(field: FieldDef, raw: unknown): Cast {
  switch (field.type) {
    case 'number': {
      const n =
        raw === '' || raw === null ? 0 : typeof raw === 'boolean' ? Number(raw) : Number(raw)
      if (!Number.isFinite(n))
        return { error: { code: 'validation_not_a_number', message: 'Must be a valid number.' } }
      if (field.min !== undefined && n < field.min) return minNumberError(field.min)
      if (field.max !== undefined && n > field.max) return maxError(field.max)
      return field.scale ? scaledValue(n, field.scale) : { value: n }
    }
    case 'bool': {
      if (raw === true || raw === 'true' || raw === 1 || raw === '1') return { value: 1 }
      if (
        raw === false ||
        raw === 'false' ||
        raw === 0 ||
        raw === '0' ||
        raw === '' ||
        raw === null
      )
        return { value: 0 }
      return invalid
    }
    case 'date': {
      const d = parseDate(raw)
      return d === null ? invalid : { value: d }
    }
    case 'json':
      return { value: JSON.stringify(raw ?? null) }
    case 'select': {
      const v = raw === null ? '' : String(raw)
      if (v !== '' && field.values && !field.values.includes(v)) {
        return { error: { code: 'validation_invalid_value', message: `Invalid value ${v}.` } }
      }
      return { value: v }
    }
    case 'relation': {
      const v = Array.isArray(raw) ? raw[raw.length - 1] : raw
      if (v === null || v === undefined || v === '') return { value: '' }
      if (typeof v !== 'string' || v.length > 255) return invalid
      return { value: v }
    }
    case 'email': {
      const v = raw === null ? '' : String(raw).trim()
      if (v !== '' && !isEmail(v)) return { error: invalidEmail }
      return { value: v }
    }
    default: {
      if (typeof raw === 'object' && raw !== null) return invalid
      const v = raw === null || raw === undefined ? '' : String(raw)
      if (field.max !== undefined && v.length > field.max) {
        return {
          error: {
            code: 'validation_max_text_constraint',
            message: `Must be less than ${field.max} character(s).`,
            params: { max: field.max },
          },
        }
      }
      if (field.min !== undefined && v !== '' && v.length < field.min) return minError(field.min)
      return { value: v }
    }
  }
}

/** A scaled number as its exact integer count of units; a finer value is refused, never rounded. */
function scaledValue(n: number, scale: number): Cast {
  const exact = n * scale
  const units = Math.round(exact)
  // n * scale carries binary rounding (12.345 * 1000 = 12345.000000000002): within an ulp is exact.
  const tolerance = Math.abs(exact) * 1e-12 + 1e-9
  if (Math.abs(exact - units) > tolerance || !Number.isSafeInteger(units)) {
    const digits = Math.round(Math.log10(scale))
    return {
      error: {
        code: 'validation_invalid_number',
        message: `Must have at most ${digits} decimal place(s).`,
        params: { scale },
      },
    }
  }
  return { value: units }
}

function minError(min: number): Cast {
  return {
    error: {
      code: 'validation_min_text_constraint',
      message: `Must be at least ${min} character(s).`,
      params: { min },
    },
  }
}

function minNumberError(min: number): Cast {
  return {
    error: {
      code: 'validation_min_number_constraint',
      message: `Must be larger than ${min}.`,
      params: { min },
    },
  }
}

function maxError(max: number): Cast {
  return {
    error: {
      code: 'validation_max_number_constraint',
      message: `Must be no more than ${max}.`,
      params: { max },
    },
  }
}

/** Fields that are required but empty after applying defaults. */
export function missingRequired(collection: CollectionDef, row: Row): Record<string, FieldError> {
  const errors: Record<string, FieldError> = {}
  for (const field of collection.fields) {
    if (!field.required || field.type === 'password') continue
    const v = row[field.name]
    if (v === undefined || v === null || v === '') {
      errors[field.name] = { code: 'validation_required', message: 'Cannot be blank.' }
    }
  }
  return errors
}

/** The stored defaults of a new row: declared defaults, else the storage zero value. */
export function defaultRow(collection: CollectionDef): Row {
  const row: Row = {}
  for (const field of collection.fields) {
    if (field.type === 'autodate') continue
    if (field.default !== undefined) {
      row[field.name] =
        field.type === 'bool'
          ? field.default
            ? 1
            : 0
          : field.scale && typeof field.default === 'number'
            ? Math.round(field.default * field.scale)
            : field.default
    } else if (field.type === 'number' || field.type === 'bool') row[field.name] = 0
    else if (field.type === 'json') row[field.name] = 'null'
    else row[field.name] = ''
  }
  return row
}
