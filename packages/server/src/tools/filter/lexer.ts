/**
 * @module Splits filter text into tokens (PocketBase's fexpr lexicon): quoted text with JSON-style
 * escapes, numbers, identifiers, comparison and join operators, parentheses and `// comments`.
 */
import { invalidFilter } from './filter-error.ts'

export type TokenType = 'text' | 'number' | 'identifier' | 'operator' | 'join' | 'open' | 'close'

export interface Token {
  type: TokenType
  /** Decoded text for `text`, the source slice otherwise. */
  value: string
  /** Offset of the token's first character, for error messages. */
  pos: number
}

export const comparisonOperators = [
  '=',
  '!=',
  '>',
  '>=',
  '<',
  '<=',
  '~',
  '!~',
  '?=',
  '?!=',
  '?>',
  '?>=',
  '?<',
  '?<=',
  '?~',
  '?!~',
] as const

export type Operator = (typeof comparisonOperators)[number]

const operatorSet = new Set<string>(comparisonOperators)
const operatorChars = new Set(['=', '!', '>', '<', '~', '?'])
const identStart = /[A-Za-z_@#]/
const identPart = /[A-Za-z0-9_.:@#]/
const digit = /[0-9]/

const simpleEscapes: Record<string, string> = {
  '"': '"',
  "'": "'",
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
}

export function tokenize(text: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < text.length) {
    const ch = text[i]
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i++
    } else if (ch === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++
    } else if (ch === '(') {
      tokens.push({ type: 'open', value: ch, pos: i++ })
    } else if (ch === ')') {
      tokens.push({ type: 'close', value: ch, pos: i++ })
    } else if (ch === ',') {
      throw invalidFilter(`unexpected "," at position ${i} (functions are not supported)`)
    } else if ((ch === '&' || ch === '|') && text[i + 1] === ch) {
      tokens.push({ type: 'join', value: ch + ch, pos: i })
      i += 2
    } else if (ch === '"' || ch === "'") {
      i = readText(text, i, tokens)
    } else if (digit.test(ch) || (ch === '-' && digit.test(text[i + 1] ?? ''))) {
      i = readNumber(text, i, tokens)
    } else if (identStart.test(ch)) {
      const start = i
      while (i < text.length && identPart.test(text[i])) i++
      tokens.push({ type: 'identifier', value: text.slice(start, i), pos: start })
    } else if (operatorChars.has(ch)) {
      const start = i
      while (i < text.length && operatorChars.has(text[i])) i++
      const op = text.slice(start, i)
      if (!operatorSet.has(op)) throw invalidFilter(`unknown operator "${op}" at position ${start}`)
      tokens.push({ type: 'operator', value: op, pos: start })
    } else {
      throw invalidFilter(`unexpected character ${JSON.stringify(ch)} at position ${i}`)
    }
  }
  return tokens
}

function readText(text: string, start: number, tokens: Token[]): number {
  const quote = text[start]
  let out = ''
  let i = start + 1
  while (i < text.length) {
    const ch = text[i]
    if (ch === quote) {
      tokens.push({ type: 'text', value: out, pos: start })
      return i + 1
    }
    if (ch === '\0') throw invalidFilter(`text can't contain NUL characters (position ${i})`)
    if (ch !== '\\') {
      out += ch
      i++
      continue
    }
    const next = text[i + 1]
    if (next === undefined) break
    if (next === 'u') {
      const hex = text.slice(i + 2, i + 6)
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw invalidFilter(`invalid \\u escape at position ${i}`)
      const code = parseInt(hex, 16)
      // PostgreSQL text can't hold NUL, so neither can the filter language.
      if (code === 0) throw invalidFilter(`text can't contain NUL characters (position ${i})`)
      out += String.fromCharCode(code)
      i += 6
    } else if (next in simpleEscapes) {
      out += simpleEscapes[next]
      i += 2
    } else {
      // Unknown escapes keep their backslash, so LIKE escapes such as `\%` and `\_` survive.
      out += ch + next
      i += 2
    }
  }
  throw invalidFilter(`unterminated text starting at position ${start}`)
}

function readNumber(text: string, start: number, tokens: Token[]): number {
  const match = /^-?[0-9]+(\.[0-9]+)?/.exec(text.slice(start))
  if (!match) throw invalidFilter(`invalid number at position ${start}`)
  const end = start + match[0].length
  const after = text[end]
  if (after !== undefined && /[A-Za-z0-9_.@#:]/.test(after)) {
    throw invalidFilter(`invalid number at position ${start}`)
  }
  tokens.push({ type: 'number', value: match[0], pos: start })
  return end
}
