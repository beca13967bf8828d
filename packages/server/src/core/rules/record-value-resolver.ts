/**
 * @module The in-memory twin of RecordSqlResolver, for realtime: identifiers resolve against one
 * record object. Anything that needs another row (relation paths, back-relations) is validated
 * like the SQL resolver does and then reported as unknown (undefined).
 */
import type { CollectionDef, FieldDef } from '../collections/collection-def.ts'
import { findField } from '../collections/registry.ts'
import {
  evaluateFilter,
  compareOne,
  type EvalOperand,
  type ValueResolver,
} from '../../tools/filter/evaluate.ts'
import { FilterError, invalidFilter } from '../../tools/filter/filter-error.ts'
import type { IdentifierOperand } from '../../tools/filter/parser.ts'
import { asciiLower, numberToText } from '../../tools/filter/values.ts'
import { fieldKind, fieldValue, idField } from './field-values.ts'
import { findBackRelation, maxRelationDepth, parseCached, relationTarget } from './paths.ts'
import type { QueryContext } from './query-context.ts'
import { keywordValue } from './record-sql-resolver.ts'
import { resolveKnown } from './request-values.ts'

export class RecordValueResolver implements ValueResolver {
  constructor(
    private readonly collection: CollectionDef,
    private readonly record: Record<string, unknown>,
    private readonly ctx: QueryContext,
    /** 'auto': the caller didn't say; values that only some callers may read are left to SQL. */
    private readonly client: boolean | 'auto',
  ) {}

  resolve(operand: IdentifierOperand): EvalOperand | undefined {
    const [head] = operand.path
    if (head === '@collection') {
      if (this.client === true)
        throw new FilterError('Only superusers can filter by @collection.', { forbidden: true })
      throw invalidFilter('@collection is not supported')
    }
    if (head === '@request' && this.client === true) {
      throw new FilterError('Only superusers can filter by @request.', { forbidden: true })
    }
    const known = resolveKnown(operand, this.collection, this.ctx)
    if (known) {
      if ('changed' in known) {
        const stored = this.fieldOperand(known.changed)
        if (!stored) return undefined
        const differs = compareOne({ ...known.body, isLiteral: true }, '!=', stored)
        return { kind: 'bool', value: differs ? 1 : 0, isLiteral: false }
      }
      if ('values' in known)
        return { kind: known.kind, value: null, values: known.values, isLiteral: true }
      return { ...known, isLiteral: true }
    }
    if (head.startsWith('@')) throw invalidFilter(`unknown field "${operand.name}"`)
    const keyword = keywordValue(operand, this.collection)
    if (keyword) return { ...keyword, isLiteral: true }

    const field = this.validatePath(operand)
    if (!field) return undefined
    const value = this.fieldOperand(field)
    if (!value) return undefined
    if (operand.modifier === 'lower') {
      if (value.value === null) return value
      const text = value.kind === 'text' ? String(value.value) : numberToText(value.value as number)
      return { kind: 'text', value: asciiLower(text), isLiteral: false }
    }
    if (operand.modifier) throw modifierError(operand)
    return value
  }

  /**
   * Walks the path through the schema with the SQL resolver's checks. Returns the field when the
   * value lives on this record (`f` or `rel.id`), undefined when another row is needed.
   */
  private validatePath(operand: IdentifierOperand): FieldDef | undefined {
    let collection = this.collection
    let hops = 0
    let multi = false
    let local = true
    const segments = operand.path
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]
      const last = i === segments.length - 1
      const back = findBackRelation(segment, collection)
      if (back) {
        if (multi) throw invalidFilter(`"${operand.name}": nested back-relations are not supported`)
        if (++hops > maxRelationDepth)
          throw invalidFilter(`"${operand.name}" nests relations too deeply`)
        this.checkListable(back.collection, operand)
        multi = true
        local = false
        collection = back.collection
        continue
      }
      const field = segment === 'id' ? idField : findField(collection, segment)
      if (!field || (this.client === true && field.hidden)) {
        throw invalidFilter(`unknown field "${segment}"`)
      }
      if (field.hidden && this.client === 'auto') local = false
      if (last) {
        if (operand.modifier === 'length' && !multi) throw modifierError(operand)
        if (operand.modifier === 'each') throw modifierError(operand)
        return local ? field : undefined
      }
      if (field.type === 'json')
        throw invalidFilter(`"${operand.name}": paths inside JSON fields are not supported`)
      if (field.type !== 'relation' || !field.collection) {
        throw invalidFilter(`"${operand.name}": "${segment}" is not a relation field`)
      }
      if (segments[i + 1] === 'id' && i + 1 === segments.length - 1) {
        if (operand.modifier === 'length' || operand.modifier === 'each')
          throw modifierError(operand)
        return local ? field : undefined
      }
      if (++hops > maxRelationDepth)
        throw invalidFilter(`"${operand.name}" nests relations too deeply`)
      const target = relationTarget(field)
      if (!target)
        throw invalidFilter(`the relation "${field.name}" points to an unknown collection`)
      this.checkListable(target, operand)
      collection = target
      local = false
    }
    if (operand.modifier === 'length' && !multi) throw modifierError(operand)
    return undefined
  }

  private checkListable(collection: CollectionDef, operand: IdentifierOperand) {
    if (this.client === true && collection.listRule === null) {
      throw invalidFilter(
        `"${operand.name}" reaches into "${collection.name}", which can't be listed`,
      )
    }
  }

  /** A field of this record as the caller may read it; undefined when visibility needs SQL. */
  private fieldOperand(field: FieldDef): EvalOperand | undefined {
    const kind = fieldKind(field)
    const value = { kind, value: fieldValue(field, this.record[field.name]), isLiteral: false }
    if (this.client === false) return value
    const hidden = this.client === 'auto' ? undefined : { ...value, value: null }
    if (field.private) {
      if (!this.collection.ownerRule) return hidden
      const owner = evaluateFilter(
        parseCached(this.collection.ownerRule),
        new RecordValueResolver(this.collection, this.record, this.ctx, false),
      )
      if (owner === undefined) return undefined
      return owner ? value : hidden
    }
    if (this.collection.type === 'auth' && field.name === 'email') {
      const visible =
        fieldValue({ name: 'emailVisibility', type: 'bool' }, this.record.emailVisibility) === 1
      const self =
        typeof this.ctx.auth?.id === 'string' &&
        this.ctx.auth.id !== '' &&
        this.ctx.auth.id === this.record.id
      return visible || self ? value : hidden
    }
    return value
  }
}

function modifierError(operand: IdentifierOperand) {
  if (operand.modifier === 'length' || operand.modifier === 'each') {
    return invalidFilter(`":${operand.modifier}" needs a multi-valued field, not "${operand.name}"`)
  }
  return invalidFilter(`":${operand.modifier}" can only be used with @request.* fields`)
}
