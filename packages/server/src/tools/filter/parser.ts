/**
 * @module Parses filter and sort text into a small AST. Precedence follows the SQL PocketBase emits:
 * `&&` binds tighter than `||`; parentheses group. Limits (length, expression count, nesting) are
 * enforced here so no later stage sees an oversized input.
 */
import { invalidFilter, invalidSort } from './filter-error.ts'
import { tokenize, type Operator, type Token } from './lexer.ts'

export type { Operator } from './lexer.ts'

export const maxFilterLength = 3500
export const maxFilterExpressions = 200
/** Deeper nesting than this is never written by hand and only stresses the SQL engines' parsers. */
export const maxFilterDepth = 32
export const maxSortItems = 8
export const maxSortNameLength = 255

export type Modifier = 'lower' | 'length' | 'each' | 'isset' | 'changed'
const modifiers = new Set<string>(['lower', 'length', 'each', 'isset', 'changed'])

export interface TextOperand {
  kind: 'text'
  value: string
}
export interface NumberOperand {
  kind: 'number'
  value: number
}
export interface IdentifierOperand {
  kind: 'identifier'
  /** The source text, e.g. `node.user:lower`. */
  name: string
  /** Dot-separated segments without the modifier, e.g. ['node', 'user']. */
  path: string[]
  modifier?: Modifier
}
export type Operand = TextOperand | NumberOperand | IdentifierOperand

export interface CompareExpr {
  type: 'compare'
  left: Operand
  op: Operator
  right: Operand
}
export interface GroupExpr {
  type: 'and' | 'or'
  /** An `and` with no items is the empty filter: it matches everything. */
  items: FilterExpr[]
}
export type FilterExpr = CompareExpr | GroupExpr

export interface SortItem {
  /** `@random` or an identifier operand. */
  field: IdentifierOperand | { kind: 'random' }
  direction: 'asc' | 'desc'
}

/** Parses a filter; blank text (or only comments) gives an empty `and`, which matches everything. */
export function parseFilter(text: string): FilterExpr {
  if (text.length > maxFilterLength) {
    throw invalidFilter(`the filter is too long (at most ${maxFilterLength} characters)`)
  }
  const parser = new Parser(tokenize(text))
  if (parser.done()) return { type: 'and', items: [] }
  const expr = parser.parseOr(0)
  if (!parser.done()) throw unexpected(parser.peek())
  return expr
}

export function parseSort(text: string): SortItem[] {
  const items: SortItem[] = []
  for (const raw of text.split(',')) {
    const part = raw.trim()
    if (!part) continue
    if (items.length >= maxSortItems)
      throw invalidSort(`at most ${maxSortItems} sort fields are allowed`)
    let direction: SortItem['direction'] = 'asc'
    let name = part
    if (name.startsWith('-') || name.startsWith('+')) {
      direction = name[0] === '-' ? 'desc' : 'asc'
      name = name.slice(1)
    }
    if (name.length > maxSortNameLength) throw invalidSort('a sort field name is too long')
    if (name === '@random') {
      items.push({ field: { kind: 'random' }, direction })
      continue
    }
    if (!/^[A-Za-z_@#][A-Za-z0-9_.:@#]*$/.test(name)) {
      throw invalidSort(`${JSON.stringify(name)} is not a field name`)
    }
    items.push({ field: parseIdentifier(name, 0, invalidSort), direction })
  }
  return items
}

class Parser {
  private index = 0
  private expressions = 0

  constructor(private readonly tokens: Token[]) {}

  done(): boolean {
    return this.index >= this.tokens.length
  }

  peek(): Token | undefined {
    return this.tokens[this.index]
  }

  parseOr(depth: number): FilterExpr {
    const items = [this.parseAnd(depth)]
    while (this.peek()?.type === 'join' && this.peek()!.value === '||') {
      this.index++
      items.push(this.parseAnd(depth))
    }
    return items.length === 1 ? items[0] : { type: 'or', items }
  }

  private parseAnd(depth: number): FilterExpr {
    const items = [this.parsePrimary(depth)]
    while (this.peek()?.type === 'join' && this.peek()!.value === '&&') {
      this.index++
      items.push(this.parsePrimary(depth))
    }
    return items.length === 1 ? items[0] : { type: 'and', items }
  }

  private parsePrimary(depth: number): FilterExpr {
    const token = this.peek()
    if (!token) throw invalidFilter('unexpected end of the filter')
    if (token.type === 'open') {
      if (depth >= maxFilterDepth) {
        throw invalidFilter(`parentheses are nested too deeply (at most ${maxFilterDepth} levels)`)
      }
      this.index++
      const inner = this.parseOr(depth + 1)
      const close = this.peek()
      if (close?.type !== 'close') throw close ? unexpected(close) : invalidFilter('missing ")"')
      this.index++
      return inner
    }
    const left = this.parseOperand()
    const opToken = this.peek()
    if (!opToken) throw invalidFilter('unexpected end of the filter (missing an operator)')
    if (opToken.type !== 'operator') throw unexpected(opToken)
    this.index++
    const right = this.parseOperand()
    if (++this.expressions > maxFilterExpressions) {
      throw invalidFilter(`too many expressions (at most ${maxFilterExpressions})`)
    }
    return { type: 'compare', left, op: opToken.value as Operator, right }
  }

  private parseOperand(): Operand {
    const token = this.peek()
    if (!token) throw invalidFilter('unexpected end of the filter')
    this.index++
    if (token.type === 'text') return { kind: 'text', value: token.value }
    if (token.type === 'number') return { kind: 'number', value: Number(token.value) }
    if (token.type === 'identifier') {
      if (this.peek()?.type === 'open') {
        throw invalidFilter(`functions such as "${token.value}(...)" are not supported`)
      }
      return parseIdentifier(token.value, token.pos, invalidFilter)
    }
    throw unexpected(token)
  }
}

function parseIdentifier(
  name: string,
  pos: number,
  fail: (detail: string) => Error,
): IdentifierOperand {
  const [pathText, modifier, ...rest] = name.split(':')
  if (rest.length > 0) throw fail(`"${name}" has more than one modifier`)
  if (modifier !== undefined && !modifiers.has(modifier)) {
    throw fail(`unknown modifier ":${modifier}" in "${name}"`)
  }
  const path = pathText.split('.')
  if (path.some((segment) => segment === ''))
    throw fail(`invalid identifier "${name}" at position ${pos}`)
  return {
    kind: 'identifier',
    name,
    path,
    ...(modifier !== undefined ? { modifier: modifier as Modifier } : {}),
  }
}

function unexpected(token: Token | undefined) {
  if (!token) return invalidFilter('unexpected end of the filter')
  const value = token.value.length > 40 ? `${token.value.slice(0, 40)}...` : token.value
  const shown = token.type === 'text' ? JSON.stringify(value) : `"${value}"`
  return invalidFilter(`unexpected ${shown} at position ${token.pos}`)
}
