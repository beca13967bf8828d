/**
 * @module `@request.*` identifiers and macros: values known before the query runs, shared by the
 * SQL compiler and the in-memory evaluator.
 */
import type { CollectionDef, FieldDef } from '../collections/collection-def.ts'
import { findCollection, findField } from '../collections/registry.ts'
import { invalidFilter } from '../../tools/filter/filter-error.ts'
import { resolveMacro } from '../../tools/filter/macros.ts'
import type { IdentifierOperand } from '../../tools/filter/parser.ts'
import { asciiLower, numberToText, type Scalar, type ValueKind } from '../../tools/filter/values.ts'
import { bodyValue, fieldKind, idField, jsValue } from './field-values.ts'
import type { QueryContext } from './query-context.ts'

export type KnownValue =
  | { kind: ValueKind; value: Scalar }
  | { kind: ValueKind; values: Scalar[] }
  /** `@request.body.f:changed` with f submitted: the caller compares `body` with the column. */
  | { changed: FieldDef; body: { kind: ValueKind; value: Scalar } }

const authCollectionName = 'users'

/** The value of a macro or `@request.*` identifier; undefined when `operand` is neither. */
export function resolveKnown(
  operand: IdentifierOperand,
  collection: CollectionDef,
  ctx: QueryContext,
): KnownValue | undefined {
  const [head] = operand.path
  if (head === '@request') return applyModifier(operand, requestValue(operand, collection, ctx))
  // Macros all start with @: only they read the clock (a compiled read that did is not reused).
  if (operand.path.length === 1 && head.startsWith('@')) {
    const macro = resolveMacro(head, ctx.now ?? new Date())
    if (macro) return applyModifier(operand, { known: macro })
  }
  return undefined
}

type Raw =
  | { known: { kind: ValueKind; value: Scalar }; raw?: unknown; isset?: boolean; field?: FieldDef }
  | { changed: FieldDef; body: { kind: ValueKind; value: Scalar } }

function requestValue(
  operand: IdentifierOperand,
  collection: CollectionDef,
  ctx: QueryContext,
): Raw {
  const [, section, name, ...rest] = operand.path
  const none = { known: { kind: 'null' as const, value: null } }
  switch (section) {
    case 'method':
      return sectionEnd(operand, 2, {
        known: { kind: 'text', value: (ctx.method ?? 'GET').toUpperCase() },
      })
    case 'context':
      return sectionEnd(operand, 2, { known: { kind: 'text', value: 'default' } })
    case 'query':
    case 'headers':
      return { ...none, isset: false }
    case 'auth': {
      if (name === undefined) throw invalidFilter(`unknown field "${operand.name}"`)
      const users = findCollection(authCollectionName)
      const field = name === 'id' ? idField : users ? findField(users, name) : undefined
      if (rest.length > 0) {
        throw invalidFilter(
          `"${operand.name}": relation paths through @request.auth are not supported`,
        )
      }
      const auth = ctx.auth
      if (!auth) return { ...none, isset: false }
      let raw: unknown = auth[name]
      if (name === 'collectionName') raw = authCollectionName
      if (name === 'collectionId') raw = users?.id
      return {
        known: field ? bodyValue(field, raw) : jsValue(raw),
        raw,
        isset: raw !== undefined,
        field,
      }
    }
    case 'body': {
      if (name === undefined) throw invalidFilter(`unknown field "${operand.name}"`)
      if (rest.length > 0) {
        throw invalidFilter(
          `"${operand.name}": relation paths through @request.body are not supported`,
        )
      }
      const field = name === 'id' ? idField : findField(collection, name)
      const body = ctx.body ?? {}
      const raw = Object.prototype.hasOwnProperty.call(body, name) ? body[name] : undefined
      if (operand.modifier === 'changed') {
        if (!field) throw invalidFilter(`unknown field "${name}" in "${operand.name}"`)
        if (raw === undefined) return { known: { kind: 'bool', value: 0 } }
        return { changed: field, body: bodyValue(field, raw) }
      }
      return { known: bodyValue(field, raw), raw, isset: raw !== undefined, field }
    }
    default:
      return none
  }
}

function sectionEnd(operand: IdentifierOperand, length: number, value: Raw): Raw {
  if (operand.path.length > length) throw invalidFilter(`unknown field "${operand.name}"`)
  return value
}

function applyModifier(operand: IdentifierOperand, raw: Raw): KnownValue {
  if ('changed' in raw) return raw
  const modifier = operand.modifier
  if (modifier === undefined) return raw.known
  const isRequest = operand.path[0] === '@request'
  const isBody = isRequest && operand.path[1] === 'body'
  switch (modifier) {
    case 'lower': {
      const { kind, value } = raw.known
      if (value === null) return { kind: 'null', value: null }
      const text = kind === 'text' ? String(value) : numberToText(value as number)
      return { kind: 'text', value: asciiLower(text) }
    }
    case 'isset':
      if (!isRequest) throw invalidFilter(`":isset" can only be used with @request.* fields`)
      return { kind: 'bool', value: raw.isset ? 1 : 0 }
    case 'changed':
      if (isBody) return raw.known
      throw invalidFilter(`":changed" can only be used with @request.body.* fields`)
    case 'length':
    case 'each': {
      if (!isBody)
        throw invalidFilter(`":${modifier}" can't be used with "${operand.path.join('.')}"`)
      const items = listOf(raw.raw)
      if (modifier === 'length') return { kind: 'number', value: items.length }
      const typed = items.map((item) =>
        raw.field ? bodyValue(itemField(raw.field), item) : jsValue(item),
      )
      const kinds = new Set(typed.filter((t) => t.kind !== 'null').map((t) => t.kind))
      const kind: ValueKind = kinds.size === 1 ? [...kinds][0] : 'text'
      const values = typed.map((t) =>
        t.value === null
          ? null
          : kind === 'text' && typeof t.value === 'number'
            ? numberToText(t.value)
            : t.value,
      )
      return { kind, values }
    }
  }
}

/** Elements of a submitted multi value; a single value counts as one, blank as none. */
function listOf(raw: unknown): unknown[] {
  if (Array.isArray(raw)) return raw
  if (raw === undefined || raw === null || raw === '') return []
  return [raw]
}

/** `:each` elements are typed like the field but are never JSON documents themselves. */
function itemField(field: FieldDef): FieldDef {
  return fieldKind(field) === 'text' ? { ...field, type: 'text' } : field
}
