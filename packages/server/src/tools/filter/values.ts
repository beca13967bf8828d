/**
 * @module The value semantics of the filter language, shared by the SQL compiler and the in-memory
 * evaluator so both give the same answer: how mixed kinds are coerced, how `''` equals NULL, how
 * `~` builds its LIKE pattern.
 */
import { invalidFilter } from './filter-error.ts'
import type { Operator } from './lexer.ts'

/** `bool` values are 0/1 numbers, as stored. */
export type ValueKind = 'text' | 'number' | 'bool' | 'null'
export type Scalar = string | number | null

/** The kind both sides of a comparison are converted to. */
export type CommonKind = 'text' | 'number'

export type BaseOperator = '=' | '!=' | '>' | '>=' | '<' | '<=' | '~' | '!~'

export function baseOperator(op: Operator): BaseOperator {
  return (op.startsWith('?') ? op.slice(1) : op) as BaseOperator
}

export function isAnyOperator(op: Operator): boolean {
  return op.startsWith('?')
}

// The digits before and after the dot are separated by it, so the engine never has two ways to
// split a run of digits (`\d+\.?\d*` had n of them, and took a second on 30,000 digits).
const numericText = /^\s*-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$/

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

/** Work (characters read or compared) one in-memory LIKE may do before it gives up: a few ms. */
export const LIKE_MATCH_BUDGET = 250_000

/** Work left to LIKE evaluations; one budget is shared by every row of an SQL statement. */
export interface LikeBudget {
  left: number
}

function charge(budget: LikeBudget, work: number) {
  budget.left -= work
  if (budget.left < 0) throw invalidFilter('a "~" pattern is too costly to match')
}

/**
 * LIKE with escape `\` (or `escape`; none when null), ASCII case-insensitive (SQLite's LIKE), `_`
 * one code point. The pattern is split at `%` into segments that must appear in order: the first
 * at the start, the last at the end, each middle one at its leftmost place (which never loses a
 * match). No backtracking (a regular expression with many `.*` took exponential time): without
 * `_` the segments are found by the engine's string search, with `_` by comparing at each place,
 * O(value x pattern) at worst. Every call charges `budget` for the text it reads and compares;
 * past it a FilterError is thrown, so the caller refuses the filter (or treats it as not holding)
 * rather than holding the event loop.
 */
export function likeMatch(
  value: string,
  pattern: string,
  budget: LikeBudget = { left: LIKE_MATCH_BUDGET },
  escape: string | null = '\\',
): boolean {
  charge(budget, value.length + pattern.length)
  const segments = parsedPattern(pattern, escape)
  const text = asciiLower(value)
  return segments.some((s) => typeof s !== 'string')
    ? matchCodePoints(text, segments, budget)
    : matchStrings(text, segments as string[])
}

const ANY = -1
// One SQL statement matches every row against the same pattern: parse it once.
let lastParsed = { pattern: '', escape: null as string | null, segments: [''] as Segment[] }

function parsedPattern(pattern: string, escape: string | null): Segment[] {
  if (lastParsed.pattern !== pattern || lastParsed.escape !== escape) {
    lastParsed = { pattern, escape, segments: likeSegments(asciiLower(pattern), escape) }
  }
  return lastParsed.segments
}

/** A segment: its text when it has no `_`, else its code points with ANY for `_`. */
type Segment = string | number[]

function likeSegments(pattern: string, escape: string | null): Segment[] {
  const chars = Array.from(pattern)
  const segments: Array<{ points: number[]; any: boolean }> = [{ points: [], any: false }]
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]
    const current = segments[segments.length - 1]
    if (ch === escape && i + 1 < chars.length) current.points.push(chars[++i].codePointAt(0)!)
    else if (ch === '%') segments.push({ points: [], any: false })
    else if (ch === '_') {
      current.points.push(ANY)
      current.any = true
    } else current.points.push(ch.codePointAt(0)!)
  }
  return segments.map((s) => (s.any ? s.points : String.fromCodePoint(...s.points)))
}

function matchStrings(text: string, segments: string[]): boolean {
  const first = segments[0]
  if (segments.length === 1) return text === first
  const last = segments[segments.length - 1]
  const end = text.length - last.length
  if (end < first.length || !text.startsWith(first) || !text.endsWith(last)) return false
  let cursor = first.length
  for (let i = 1; i < segments.length - 1; i++) {
    const at = text.indexOf(segments[i], cursor)
    if (at === -1 || at + segments[i].length > end) return false
    cursor = at + segments[i].length
  }
  return true
}

function matchCodePoints(value: string, segments: Segment[], budget: LikeBudget): boolean {
  const text = Array.from(value, (ch) => ch.codePointAt(0)!)
  const points = segments.map((s) =>
    typeof s === 'string' ? Array.from(s, (ch) => ch.codePointAt(0)!) : s,
  )
  const matchesAt = (segment: number[], at: number): boolean => {
    charge(budget, segment.length + 1)
    for (let k = 0; k < segment.length; k++)
      if (segment[k] !== ANY && segment[k] !== text[at + k]) return false
    return true
  }
  const first = points[0]
  if (points.length === 1) return first.length === text.length && matchesAt(first, 0)
  const last = points[points.length - 1]
  const end = text.length - last.length
  if (end < first.length || !matchesAt(first, 0) || !matchesAt(last, end)) return false
  let cursor = first.length
  for (const segment of points.slice(1, -1)) {
    let at = cursor
    while (at + segment.length <= end && !matchesAt(segment, at)) at++
    if (at + segment.length > end) return false
    cursor = at + segment.length
  }
  return true
}
