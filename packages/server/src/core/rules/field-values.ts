/**
 * @module How stored and submitted values map onto the filter language's kinds: bools are 0/1,
 * numbers numbers, everything else text.
 */
import type { FieldDef } from '../collections/collection-def.ts'
import type { Scalar, ValueKind } from '../../tools/filter/values.ts'

export const idField: FieldDef = { name: 'id', type: 'text' }

export function fieldKind(field: FieldDef): ValueKind {
  if (field.type === 'number') return 'number'
  if (field.type === 'bool') return 'bool'
  return 'text'
}

/** A column value as stored, in the field's kind (a scaled number in the API's units); missing
 * gives null. */
export function fieldValue(field: FieldDef, raw: unknown): Scalar {
  if (raw === null || raw === undefined) return null
  const kind = fieldKind(field)
  if (kind === 'bool') return toBool(raw) ? 1 : 0
  if (kind === 'number') {
    const n = typeof raw === 'number' ? raw : Number(raw)
    if (!Number.isFinite(n)) return null
    return field.scale ? n / field.scale : n
  }
  return toText(raw)
}

/** A submitted body value: typed by the collection field when there is one, else by its JS type. */
export function bodyValue(
  field: FieldDef | undefined,
  raw: unknown,
): { kind: ValueKind; value: Scalar } {
  if (raw === null || raw === undefined) return { kind: 'null', value: null }
  if (field && fieldKind(field) === 'bool' && isBoolLike(raw))
    return { kind: 'bool', value: toBool(raw) ? 1 : 0 }
  if (
    field &&
    fieldKind(field) === 'number' &&
    typeof raw === 'string' &&
    raw.trim() !== '' &&
    Number.isFinite(Number(raw))
  ) {
    return { kind: 'number', value: Number(raw) }
  }
  return jsValue(raw)
}

/** A plain JS value by its own type (auth rows, body values without a field). */
export function jsValue(raw: unknown): { kind: ValueKind; value: Scalar } {
  if (raw === null || raw === undefined) return { kind: 'null', value: null }
  if (typeof raw === 'boolean') return { kind: 'bool', value: raw ? 1 : 0 }
  if (typeof raw === 'number')
    return Number.isFinite(raw) ? { kind: 'number', value: raw } : { kind: 'null', value: null }
  return { kind: 'text', value: toText(raw) }
}

function isBoolLike(raw: unknown): boolean {
  return (
    typeof raw === 'boolean' ||
    raw === 0 ||
    raw === 1 ||
    raw === 'true' ||
    raw === 'false' ||
    raw === '1' ||
    raw === '0'
  )
}

function toBool(raw: unknown): boolean {
  return raw === true || raw === 1 || raw === '1' || raw === 'true'
}

function toText(raw: unknown): string {
  if (typeof raw === 'string') return raw
  if (typeof raw === 'number' || typeof raw === 'boolean') return String(raw)
  if (raw instanceof Date) return raw.toISOString().replace('T', ' ')
  return JSON.stringify(raw) ?? ''
}
