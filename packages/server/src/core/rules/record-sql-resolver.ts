/**
 * @module Resolves identifiers of a record filter to SQL: fields of the scope's collection,
 * relation paths (LEFT JOINs), back-relations (correlated subqueries), `@request.*` and macros.
 * In client mode it also enforces what a caller may see: hidden fields are unknown, private
 * fields read as NULL unless the owner rule holds, and relations need the target's list rule.
 */
import { sql, type RawBuilder } from 'kysely'
import type { CollectionDef, FieldDef } from '../collections/collection-def.ts'
import { findField } from '../collections/registry.ts'
import {
  compareSingle,
  compileFilterSql,
  literalOperand,
  lowerSql,
  numberToTextSql,
  sqlTrue,
  type SqlOperand,
  type SqlResolver,
} from '../../tools/filter/compile.ts'
import { FilterError, invalidFilter } from '../../tools/filter/filter-error.ts'
import type { IdentifierOperand } from '../../tools/filter/parser.ts'
import { literalSql, type SqlDialect } from '../../tools/filter/sql-values.ts'
import { fieldKind, idField } from './field-values.ts'
import type { JoinSet } from './join-set.ts'
import { findBackRelation, maxRelationDepth, parseCached, relationTarget } from './paths.ts'
import type { QueryContext } from './query-context.ts'
import { resolveKnown } from './request-values.ts'

export interface Scope {
  collection: CollectionDef
  alias: string
  joins: JoinSet
}

export class RecordSqlResolver implements SqlResolver {
  readonly dialect: SqlDialect

  constructor(
    private readonly scope: Scope,
    private readonly ctx: QueryContext,
    private readonly client: boolean,
  ) {
    this.dialect = ctx.dialect
  }

  resolve(operand: IdentifierOperand): SqlOperand {
    const [head] = operand.path
    if (head === '@collection') {
      if (this.client)
        throw new FilterError('Only superusers can filter by @collection.', { forbidden: true })
      throw invalidFilter('@collection is not supported')
    }
    if (head === '@request' && this.client) {
      throw new FilterError('Only superusers can filter by @request.', { forbidden: true })
    }
    const known = resolveKnown(operand, this.scope.collection, this.ctx)
    if (known) {
      if ('changed' in known) {
        const column = this.fieldSql(this.scope, known.changed)
        const body = literalOperand(known.body.kind, known.body.value, this.dialect)
        const differs = compareSingle(body, '!=', column, this.dialect)
        return { kind: 'bool', sql: sql`(CASE WHEN ${differs.sql} THEN 1 ELSE 0 END)` }
      }
      if ('values' in known)
        return {
          kind: known.kind,
          sql: literalSql('text', null, this.dialect),
          values: known.values,
        }
      return literalOperand(known.kind, known.value, this.dialect)
    }
    if (head.startsWith('@')) throw invalidFilter(`unknown field "${operand.name}"`)
    const keyword = keywordValue(operand, this.scope.collection)
    if (keyword) return literalOperand(keyword.kind, keyword.value, this.dialect)
    return this.withModifier(operand, this.path(operand))
  }

  private withModifier(operand: IdentifierOperand, resolved: SqlOperand): SqlOperand {
    switch (operand.modifier) {
      case undefined:
        return resolved
      case 'lower': {
        const text =
          resolved.kind === 'text' ? resolved.sql : numberToTextSql(resolved.sql, this.dialect)
        return { ...resolved, kind: 'text', sql: lowerSql(text, this.dialect), guarded: undefined }
      }
      case 'length':
        if (!resolved.multi)
          throw invalidFilter(`":length" needs a multi-valued field, not "${operand.name}"`)
        return {
          kind: 'number',
          sql: sql`(SELECT COUNT(*) FROM ${resolved.multi.source} WHERE ${resolved.multi.where})`,
        }
      case 'each':
        throw invalidFilter(`":each" needs a multi-valued field, not "${operand.name}"`)
      default:
        throw invalidFilter(`":${operand.modifier}" can only be used with @request.* fields`)
    }
  }

  private path(operand: IdentifierOperand): SqlOperand {
    const segments = operand.path
    let scope = this.scope
    let hops = 0
    let multi: { parent: Scope; sub: Scope; relation: FieldDef } | undefined
    let value: SqlOperand | undefined
    for (let i = 0; i < segments.length && !value; i++) {
      const segment = segments[i]
      const last = i === segments.length - 1
      const back = findBackRelation(segment, scope.collection)
      if (back) {
        if (multi) throw invalidFilter(`"${operand.name}": nested back-relations are not supported`)
        if (++hops > maxRelationDepth) throw tooDeep(operand)
        this.checkListable(back.collection, operand)
        const alias = scope.joins.nextAlias('s')
        const sub: Scope = { collection: back.collection, alias, joins: scope.joins.child(alias) }
        multi = { parent: scope, sub, relation: back.field }
        scope = sub
        if (last) value = { kind: 'text', sql: sql.id(alias, 'id') }
        continue
      }
      const field = this.field(scope.collection, segment, operand)
      if (last) {
        value = this.fieldSql(scope, field)
        break
      }
      if (field.type !== 'relation' || !field.collection) {
        throw invalidFilter(`"${operand.name}": "${segment}" is not a relation field`)
      }
      // `rel.id` is the relation column itself: no join needed.
      if (segments[i + 1] === 'id' && i + 1 === segments.length - 1) {
        value = this.fieldSql(scope, field)
        break
      }
      if (++hops > maxRelationDepth) throw tooDeep(operand)
      scope = this.joinRelation(scope, field, operand)
    }
    if (!value) throw invalidFilter(`unknown field "${operand.name}"`)
    if (!multi) return value
    // Correlate through the relation as the caller may see it, so a private link can't be probed.
    const { parent, sub, relation } = multi
    const link = this.fieldSql(sub, relation)
    const where = [sql`${link.sql} = ${sql.id(parent.alias, 'id')}`]
    const listRule = this.client ? sub.collection.listRule : ''
    if (listRule) {
      const rule = this.compileRule(sub, listRule)
      if (rule !== sqlTrue) where.push(rule)
    }
    const table = sql.table(sub.collection.name)
    return {
      ...value,
      multi: {
        source: sql`${table} AS ${sql.id(sub.alias)} ${sub.joins.sql()}`,
        where: sql.join(where, sql` AND `),
      },
    }
  }

  private field(collection: CollectionDef, name: string, operand: IdentifierOperand): FieldDef {
    const field = name === 'id' ? idField : findField(collection, name)
    if (!field || (this.client && field.hidden)) {
      const where = operand.path.length > 1 ? ` in "${operand.name}"` : ''
      throw invalidFilter(`unknown field "${name}"${where}`)
    }
    if (field.type === 'json' && operand.path[operand.path.length - 1] !== name) {
      throw invalidFilter(`"${operand.name}": paths inside JSON fields are not supported`)
    }
    return field
  }

  private checkListable(collection: CollectionDef, operand: IdentifierOperand) {
    if (this.client && collection.listRule === null) {
      throw invalidFilter(
        `"${operand.name}" reaches into "${collection.name}", which can't be listed`,
      )
    }
  }

  private joinRelation(scope: Scope, field: FieldDef, operand: IdentifierOperand): Scope {
    const target = targetOf(field)
    this.checkListable(target, operand)
    const key = `${scope.alias}.${field.name}:${this.client ? 'client' : 'server'}`
    const alias = scope.joins.join(key, 'j', (alias) => {
      const on = [sql`${sql.id(alias, 'id')} = ${this.fieldSql(scope, field).sql}`]
      const listRule = this.client ? target.listRule : ''
      if (listRule) {
        // The related rule runs in its own scope, so its joins can't clash with the ON clause order.
        const inner = scope.joins.nextAlias('l')
        const innerScope: Scope = {
          collection: target,
          alias: inner,
          joins: scope.joins.child(inner),
        }
        const rule = this.compileRule(innerScope, listRule)
        if (rule !== sqlTrue)
          on.push(sql`EXISTS (SELECT 1 FROM ${sql.table(target.name)} AS ${sql.id(inner)} ${innerScope.joins.sql()}
          WHERE ${sql.id(inner, 'id')} = ${sql.id(alias, 'id')} AND ${rule})`)
      }
      return sql`LEFT JOIN ${sql.table(target.name)} AS ${sql.id(alias)} ON ${sql.join(on, sql` AND `)}`
    })
    return { collection: target, alias, joins: scope.joins }
  }

  /** A server rule (list or owner rule) on `scope`, with full access. */
  private compileRule(scope: Scope, text: string): RawBuilder<unknown> {
    return compileFilterSql(parseCached(text), new RecordSqlResolver(scope, this.ctx, false))
  }

  /** A column as this caller may read it. */
  fieldSql(scope: Scope, field: FieldDef): SqlOperand {
    const column = columnSql(scope, field)
    const kind = fieldKind(field)
    if (!this.client) return { kind, sql: column }
    const guard = this.visibility(scope, field)
    if (!guard) return { kind, sql: column }
    return { kind, sql: sql`(CASE WHEN ${guard} THEN ${column} END)`, guarded: { guard, column } }
  }

  private visibility(scope: Scope, field: FieldDef): RawBuilder<unknown> | undefined {
    const { collection } = scope
    if (field.private) {
      if (!collection.ownerRule) return sql`(1=0)`
      return this.compileRule(scope, collection.ownerRule)
    }
    if (collection.type === 'auth' && field.name === 'email') {
      const visible = sql`${sql.id(scope.alias, 'emailVisibility')} = 1`
      const authId = this.ctx.auth?.id
      if (typeof authId !== 'string' || authId === '') return visible
      return sql`(${visible} OR ${sql.id(scope.alias, 'id')} = ${literalSql('text', authId, this.dialect)})`
    }
    return undefined
  }
}

/**
 * A column in the API's units: a scaled number (stored as integer units) is divided back, so
 * `balance > 12.5` and sorts mean what the API shows. Division by a power of ten is correctly
 * rounded on both engines, so `amount = 12.345` matches exactly what the JSON shows as 12.345.
 */
function columnSql(scope: Scope, field: FieldDef): RawBuilder<unknown> {
  const column = sql.id(scope.alias, field.name)
  if (!field.scale) return column
  return sql`(CAST(${column} AS DOUBLE PRECISION) / ${sql.lit(field.scale)})`
}

function targetOf(field: FieldDef): CollectionDef {
  const target = relationTarget(field)
  if (!target) throw invalidFilter(`the relation "${field.name}" points to an unknown collection`)
  return target
}

function tooDeep(operand: IdentifierOperand) {
  return invalidFilter(`"${operand.name}" nests relations too deeply (at most ${maxRelationDepth})`)
}

/** `true`, `false` and `null` are literals unless the collection has a field of that name. */
export function keywordValue(operand: IdentifierOperand, collection: CollectionDef) {
  if (operand.path.length !== 1) return undefined
  const [name] = operand.path
  if (name !== 'true' && name !== 'false' && name !== 'null') return undefined
  if (findField(collection, name)) return undefined
  if (operand.modifier) throw invalidFilter(`"${operand.name}" can't have a modifier`)
  if (name === 'null') return { kind: 'null' as const, value: null }
  return { kind: 'bool' as const, value: name === 'true' ? 1 : 0 }
}
