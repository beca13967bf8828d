/**
 * @module Compiles a parsed filter into one boolean SQL expression through a resolver that knows
 * the fields (PocketBase's FieldResolver split). Every value is a bound, typed parameter; the
 * comparison semantics mirror values.ts, which the in-memory evaluator uses too.
 */
import { sql, type RawBuilder } from 'kysely'
import { invalidFilter } from './filter-error.ts'
import type { FilterExpr, IdentifierOperand, Operand, Operator } from './parser.ts'
import {
  likeEscapeSql,
  literalSql,
  lowerSql,
  numberToTextSql,
  sqlBoolean,
  sqlFalse,
  sqlTrue,
  type SqlDialect,
} from './sql-values.ts'
import {
  asciiLower,
  baseOperator,
  commonKind,
  compareValues,
  convertValue,
  isAnyOperator,
  likePattern,
  type BaseOperator,
  type CommonKind,
  type Scalar,
  type ValueKind,
} from './values.ts'

export interface SqlOperand {
  kind: ValueKind
  /** The value's SQL; for a multi-valued operand, the value of one row of `multi`. */
  sql: RawBuilder<unknown>
  /** Set when the value is known while compiling (literals, macros, `@request.*`). */
  literal?: { value: Scalar }
  /** Several values known while compiling (`@request.body.tags:each`). */
  values?: Scalar[]
  /** Set when `sql` is `CASE WHEN guard THEN column END` (a value only some callers may read):
   * equality with a literal is then built as `guard AND column = literal`, which can use an index. */
  guarded?: { guard: RawBuilder<unknown>; column: RawBuilder<unknown> }
  /** A multi-valued operand: its rows are `SELECT ... FROM <source> WHERE <where>`. */
  multi?: { source: RawBuilder<unknown>; where: RawBuilder<unknown> }
}

export interface SqlResolver {
  dialect: SqlDialect
  resolve(operand: IdentifierOperand): SqlOperand
}

export function literalOperand(kind: ValueKind, value: Scalar, dialect: SqlDialect): SqlOperand {
  const v = typeof value === 'number' && !Number.isFinite(value) ? null : value
  const k: ValueKind = v === null ? 'null' : kind
  return { kind: k, sql: literalSql(k, v, dialect), literal: { value: v } }
}

export function compileFilterSql(expr: FilterExpr, resolver: SqlResolver): RawBuilder<unknown> {
  if (expr.type === 'compare') return compileCompare(expr.left, expr.op, expr.right, resolver)
  // Constants from folded comparisons (`@request.auth.id != ''`) drop out of their group.
  const isAnd = expr.type === 'and'
  const absorbing = isAnd ? sqlFalse : sqlTrue
  const neutral = isAnd ? sqlTrue : sqlFalse
  // Every item is compiled, so an unknown field is reported even after a constant.
  const parts = expr.items
    .map((item) => compileFilterSql(item, resolver))
    .filter((part) => part !== neutral)
  if (parts.includes(absorbing)) return absorbing
  if (parts.length === 0) return neutral
  if (parts.length === 1) return parts[0]
  return sql`(${sql.join(parts, expr.type === 'and' ? sql` AND ` : sql` OR `)})`
}

function operandSql(operand: Operand, resolver: SqlResolver): SqlOperand {
  if (operand.kind === 'text') return literalOperand('text', operand.value, resolver.dialect)
  if (operand.kind === 'number') return literalOperand('number', operand.value, resolver.dialect)
  return resolver.resolve(operand)
}

function compileCompare(
  leftNode: Operand,
  op: Operator,
  rightNode: Operand,
  resolver: SqlResolver,
): RawBuilder<unknown> {
  const dialect = resolver.dialect
  const left = operandSql(leftNode, resolver)
  const right = operandSql(rightNode, resolver)
  const leftMany = left.multi !== undefined || left.values !== undefined
  const rightMany = right.multi !== undefined || right.values !== undefined
  if (leftMany && rightMany) {
    throw invalidFilter(
      `"${describe(leftNode)}" and "${describe(rightNode)}" are both multi-valued`,
    )
  }
  const base = baseOperator(op)
  if (!leftMany && !rightMany) return compareSingle(left, base, right, dialect).sql

  const many = leftMany ? left : right
  const cond = (value: SqlOperand) =>
    leftMany
      ? compareSingle(value, base, right, dialect)
      : compareSingle(left, base, value, dialect)
  const whenEmpty = cond(literalOperand(many.kind, null, dialect))
  const any = isAnyOperator(op)

  if (many.values) {
    if (many.values.length === 0) return whenEmpty.sql
    const parts = many.values.map((v) => cond(literalOperand(many.kind, v, dialect)).sql)
    return sql`(${sql.join(parts, any ? sql` OR ` : sql` AND `)})`
  }
  // Rows of a multi-valued operand; with none, the comparison sees one NULL (PocketBase's LEFT JOIN).
  const { source, where } = many.multi!
  const each = cond({ kind: many.kind, sql: many.sql })
  const rows = sql`EXISTS (SELECT 1 FROM ${source} WHERE ${where})`
  if (any) {
    const match = sql`EXISTS (SELECT 1 FROM ${source} WHERE ${where} AND ${each.sql})`
    if (whenEmpty.constant === false) return match
    return sql`(${match} OR (NOT ${rows} AND ${whenEmpty.sql}))`
  }
  const violation = sql`EXISTS (SELECT 1 FROM ${source} WHERE ${where} AND (${each.sql}) IS NOT TRUE)`
  if (whenEmpty.constant === true) return sql`(NOT ${violation})`
  return sql`((${rows} OR ${whenEmpty.sql}) AND NOT ${violation})`
}

interface Compiled {
  sql: RawBuilder<unknown>
  /** Set when the result is known while compiling. */
  constant?: boolean
}

function constant(value: boolean): Compiled {
  return { sql: sqlBoolean(value), constant: value }
}

/** `a op b` for two single values, with the kind coercion and null rules of values.ts. */
export function compareSingle(
  left: SqlOperand,
  op: BaseOperator,
  right: SqlOperand,
  dialect: SqlDialect,
): Compiled {
  const kind = commonKind(
    op,
    { kind: left.kind, literal: left.literal?.value, isLiteral: !!left.literal },
    { kind: right.kind, literal: right.literal?.value, isLiteral: !!right.literal },
  )
  if (left.literal && right.literal) {
    const a = convertValue(left.literal.value, kind)
    const b = convertValue(right.literal.value, kind)
    return constant(compareValues(kind, op, a, b, true))
  }
  const isOrdering = op === '>' || op === '>=' || op === '<' || op === '<='
  if (isOrdering && (left.literal?.value === null || right.literal?.value === null))
    return constant(false)

  const a = convertSql(left, kind, dialect)
  const b = convertSql(right, kind, dialect)
  if (op === '~' || op === '!~') return { sql: likeSql(a, right, b, op === '!~', dialect) }
  if (op === '=' || op === '!=')
    return { sql: equalSql(kind, left, a, right, b, op === '!=', dialect) }
  const cmp = sql.raw(op)
  if (kind === 'text' && dialect === 'postgres')
    return { sql: sql`((${a}) COLLATE "C" ${cmp} (${b}))` }
  return { sql: sql`(${a} ${cmp} ${b})` }
}

function convertSql(
  operand: SqlOperand,
  kind: CommonKind,
  dialect: SqlDialect,
): RawBuilder<unknown> {
  if (operand.literal) return literalSql(kind, convertValue(operand.literal.value, kind), dialect)
  if (kind === 'text' && (operand.kind === 'number' || operand.kind === 'bool')) {
    return numberToTextSql(operand.sql, dialect)
  }
  return operand.sql
}

function equalSql(
  kind: CommonKind,
  left: SqlOperand,
  a: RawBuilder<unknown>,
  right: SqlOperand,
  b: RawBuilder<unknown>,
  negate: boolean,
  dialect: SqlDialect,
): RawBuilder<unknown> {
  const known = right.literal
    ? { value: right.literal.value, other: a }
    : left.literal
      ? { value: left.literal.value, other: b }
      : null
  const otherOperand = right.literal ? left : right
  const unconverted = kind === 'text' ? otherOperand.kind === 'text' : otherOperand.kind !== 'text'
  if (
    !negate &&
    known &&
    known.value !== null &&
    known.value !== '' &&
    otherOperand.guarded &&
    unconverted
  ) {
    const { guard, column } = otherOperand.guarded
    return sql`(${guard} AND ${column} = ${right.literal ? b : a})`
  }
  if (kind === 'text') {
    // A non-empty literal can't equal NULL, so the plain form (which can use an index) is exact.
    if (known && known.value !== null && known.value !== '') {
      const lit = right.literal ? b : a
      return negate
        ? sql`(${known.other} <> ${lit} OR ${known.other} IS NULL)`
        : sql`(${known.other} = ${lit})`
    }
    const cmp = negate ? sql`<>` : sql`=`
    return sql`(COALESCE(${a}, '') ${cmp} COALESCE(${b}, ''))`
  }
  if (known && known.value === null) {
    return negate ? sql`(${known.other} IS NOT NULL)` : sql`(${known.other} IS NULL)`
  }
  if (known) {
    const lit = right.literal ? b : a
    return negate
      ? sql`(${known.other} <> ${lit} OR ${known.other} IS NULL)`
      : sql`(${known.other} = ${lit})`
  }
  if (dialect === 'postgres') {
    return negate ? sql`(${a} IS DISTINCT FROM ${b})` : sql`(${a} IS NOT DISTINCT FROM ${b})`
  }
  return negate ? sql`(${a} IS NOT ${b})` : sql`(${a} IS ${b})`
}

function likeSql(
  a: RawBuilder<unknown>,
  right: SqlOperand,
  b: RawBuilder<unknown>,
  negate: boolean,
  dialect: SqlDialect,
): RawBuilder<unknown> {
  let pattern: RawBuilder<unknown>
  if (right.literal) {
    const text = convertValue(right.literal.value, 'text') ?? ''
    pattern = literalSql('text', asciiLower(likePattern(String(text), true)), dialect)
  } else {
    pattern = lowerSql(sql`('%' || ${likeEscapeSql(sql`COALESCE(${b}, '')`)} || '%')`, dialect)
  }
  const value = lowerSql(sql`COALESCE(${a}, '')`, dialect)
  const like = negate ? sql`NOT LIKE` : sql`LIKE`
  return sql`(${value} ${like} ${pattern} ESCAPE '\\')`
}

function describe(operand: Operand): string {
  return operand.kind === 'identifier' ? operand.name : String(operand.value)
}

export { lowerSql, numberToTextSql, literalSql, sqlTrue, sqlFalse }
export type { SqlDialect }
