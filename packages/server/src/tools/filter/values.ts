/**
 * @module The value semantics of the filter language, shared by the SQL compiler and the in-memory
 * evaluator so both give the same answer: how mixed kinds are coerced, how `''` equals NULL, how
 * `~` builds its LIKE pattern.
 */
import type { Operator } from './lexer.ts'

/** `bool` values are 0/1 numbers, as stored. */
export type ValueKind = 'text' | 'number' | 'bool' | 'null'
export type Scalar = string | number | null

export interface TypedValue {
  kind: ValueKind
  value: Scalar
}

/** The kind both sides of a comparison are converted to. */
export type CommonKind = 'text' | 'number'

export type BaseOperator = '=' | '!=' | '>' | '>=' | '<' | '<=' | '~' | '!~'

export function baseOperator(op: Operator): BaseOperator {
  return (op.startsWith('?') ? op.slice(1) : op) as BaseOperator
}

export function isAnyOperator(op: Operator): boolean {
  return op.startsWith('?')
}

const numericText = /^\s*-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/

export function isNumericText(value: string): boolean {
  return numericText.test(value)
}

/**
 * Mixed text/number comparisons: a numeric text literal is read as a number (`n = "5"` matches 5);
 * anything else compares as text, with the number rendered like JavaScript's `String(n)`.
 * `~` always compares text.
 */
export function commonKind(
  op: BaseOperator,
  left: { kind: ValueKind; literal?: Scalar | undefined; isLiteral: boolean },
  right: { kind: ValueKind; literal?: Scalar | undefined; isLiteral: boolean },
): CommonKind {
  if (op === '~' || op === '!~') return 'text'
  const l = left.kind === 'bool' ? 'number' : left.kind
  const r = right.kind === 'bool' ? 'number' : right.kind
  if (l === 'null' && r === 'null') return 'text'
  if (l === 'null') return r as CommonKind
  if (r === 'null') return l as CommonKind
  if (l === r) return l
  const textSide = l === 'text' ? left : right
  if (
    textSide.isLiteral &&
    typeof textSide.literal === 'string' &&
    isNumericText(textSide.literal)
  ) {
    return 'number'
  }
  return 'text'
}

export function numberToText(value: number): string {
  return String(value)
}

/** Converts a value to the common kind (null stays null). */
export function convertValue(value: Scalar, to: CommonKind): Scalar {
  if (value === null) return null
  if (to === 'text') return typeof value === 'number' ? numberToText(value) : value
  return typeof value === 'number' ? value : Number(value)
}

/** `a op b` on values already converted to `kind`; `rightIsLiteral` picks the `~` pattern rule. */
export function compareValues(
  kind: CommonKind,
  op: BaseOperator,
  a: Scalar,
  b: Scalar,
  rightIsLiteral: boolean,
): boolean {
  switch (op) {
    case '=':
      return equalValues(kind, a, b)
    case '!=':
      return !equalValues(kind, a, b)
    case '~':
      return likeMatch(String(a ?? ''), likePattern(String(b ?? ''), rightIsLiteral))
    case '!~':
      return !likeMatch(String(a ?? ''), likePattern(String(b ?? ''), rightIsLiteral))
    default: {
      if (a === null || b === null) return false
      const order =
        kind === 'number'
          ? Math.sign((a as number) - (b as number))
          : compareText(String(a), String(b))
      if (op === '>') return order > 0
      if (op === '>=') return order >= 0
      if (op === '<') return order < 0
      return order <= 0
    }
  }
}

function equalValues(kind: CommonKind, a: Scalar, b: Scalar): boolean {
  // `''` and NULL are the same for text; a missing number only equals another missing one.
  if (kind === 'text') return (a ?? '') === (b ?? '')
  if (a === null || b === null) return a === b
  return a === b
}

/** Byte order of the UTF-8 encodings, like SQLite's BINARY and PostgreSQL's "C" collation. */
export function compareText(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

/** True when `value` has a `%` that no backslash escapes. */
export function hasUnescapedPercent(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    if (value[i] === '\\') i++
    else if (value[i] === '%') return true
  }
  return false
}

/**
 * The LIKE pattern (escape character `\`) for the right side of `~`. A literal without an unescaped
 * `%` means "contains": its `\`, `%`, `_` are escaped and it is wrapped in `%...%`. A literal with one
 * is used as written, except that a dangling final backslash is escaped (PostgreSQL rejects it).
 * A column value is matched literally: all its `\`, `%`, `_` are escaped before wrapping.
 */
export function likePattern(value: string, isLiteral: boolean): string {
  if (!isLiteral) return `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  if (hasUnescapedPercent(value)) return fixTrailingEscape(value)
  let out = ''
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]
    const next = value[i + 1]
    if (ch === '\\' && (next === '\\' || next === '%' || next === '_')) {
      out += ch + next
      i++
    } else if (ch === '\\' || ch === '%' || ch === '_') {
      out += `\\${ch}`
    } else {
      out += ch
    }
  }
  return `%${out}%`
}

function fixTrailingEscape(pattern: string): string {
  let count = 0
  for (let i = pattern.length - 1; i >= 0 && pattern[i] === '\\'; i--) count++
  return count % 2 === 1 ? `${pattern}\\` : pattern
}

export const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase())

/** LIKE with escape `\`, ASCII case-insensitive (SQLite's LIKE). */
export function likeMatch(value: string, pattern: string): boolean {
  let regex = ''
  const chars = Array.from(asciiLower(pattern))
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]
    if (ch === '\\' && i + 1 < chars.length) regex += escapeRegex(chars[++i])
    else if (ch === '%') regex += '.*'
    else if (ch === '_') regex += '.'
    else regex += escapeRegex(ch)
  }
  return new RegExp(`^${regex}$`, 'su').test(asciiLower(value))
}

function escapeRegex(ch: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(ch) ? `\\${ch}` : ch
}
