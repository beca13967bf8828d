/**
 * @module Evaluates a parsed filter in memory (for realtime events) with the same semantics as the
 * SQL compiler. A resolver that cannot know a value without the database returns undefined, and
 * then so does the whole evaluation, so the caller can fall back to SQL.
 */
import { invalidFilter } from './filter-error.ts'
import type { FilterExpr, IdentifierOperand, Operand } from './parser.ts'
import {
  baseOperator,
  commonKind,
  compareValues,
  convertValue,
  isAnyOperator,
  type BaseOperator,
  type Scalar,
  type ValueKind,
} from './values.ts'

export interface EvalOperand {
  kind: ValueKind
  value: Scalar
  /** Known at compile time in SQL terms (literals, macros, `@request.*`); picks the `~` rule. */
  isLiteral: boolean
  /** Several values (`:each`, multi-valued operands). */
  values?: Scalar[]
}

export interface ValueResolver {
  /** The operand's value, or undefined when only the database knows it. */
  resolve(operand: IdentifierOperand): EvalOperand | undefined
}

export function evaluateFilter(expr: FilterExpr, resolver: ValueResolver): boolean | undefined {
  if (expr.type === 'compare') {
    const left = operandValue(expr.left, resolver)
    if (left === undefined) return undefined
    const right = operandValue(expr.right, resolver)
    if (right === undefined) return undefined
    return evaluateCompare(left, baseOperator(expr.op), isAnyOperator(expr.op), right)
  }
  // Unknown parts only matter when the known ones don't decide the result.
  // Every item is evaluated, so an unknown field is reported whatever the other items say.
  const results = expr.items.map((item) => evaluateFilter(item, resolver))
  if (expr.type === 'and' && results.includes(false)) return false
  if (expr.type === 'or' && results.includes(true)) return true
  if (results.includes(undefined)) return undefined
  return expr.type === 'and'
}

function operandValue(operand: Operand, resolver: ValueResolver): EvalOperand | undefined {
  if (operand.kind === 'text') return { kind: 'text', value: operand.value, isLiteral: true }
  if (operand.kind === 'number') return { kind: 'number', value: operand.value, isLiteral: true }
  return resolver.resolve(operand)
}

function evaluateCompare(
  left: EvalOperand,
  op: BaseOperator,
  any: boolean,
  right: EvalOperand,
): boolean {
  if (left.values && right.values)
    throw invalidFilter('two multi-valued operands cannot be compared')
  const many = left.values ? left : right.values ? right : null
  if (!many) return compareOne(left, op, right)
  const cond = (value: Scalar) => {
    const item: EvalOperand = {
      kind: value === null ? 'null' : many.kind,
      value,
      isLiteral: many.isLiteral,
    }
    return many === left ? compareOne(item, op, right) : compareOne(left, op, item)
  }
  const values = many.values!
  if (values.length === 0) return cond(null)
  return any ? values.some(cond) : values.every(cond)
}

export function compareOne(left: EvalOperand, op: BaseOperator, right: EvalOperand): boolean {
  const kind = commonKind(
    op,
    { kind: left.kind, literal: left.value, isLiteral: left.isLiteral },
    { kind: right.kind, literal: right.value, isLiteral: right.isLiteral },
  )
  return compareValues(
    kind,
    op,
    convertValue(left.value, kind),
    convertValue(right.value, kind),
    right.isLiteral,
  )
}
