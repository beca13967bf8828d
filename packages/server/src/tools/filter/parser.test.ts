import { describe, expect, it } from 'vitest'
import { FilterError } from './filter-error.ts'
import { parseFilter, parseSort, type FilterExpr } from './parser.ts'

/** A compact rendering of the tree: `(a = 1 && (b = 2 || c = 3))`. */
function show(expr: FilterExpr): string {
  if (expr.type === 'compare') {
    const side = (o: typeof expr.left) =>
      o.kind === 'identifier' ? o.name : JSON.stringify(o.value)
    return `${side(expr.left)} ${expr.op} ${side(expr.right)}`
  }
  if (expr.items.length === 0) return 'TRUE'
  return `(${expr.items.map(show).join(expr.type === 'and' ? ' && ' : ' || ')})`
}

describe('parseFilter', () => {
  it('binds && tighter than ||', () => {
    expect(show(parseFilter('a = 1 || b = 2 && c = 3'))).toBe('(a = 1 || (b = 2 && c = 3))')
    expect(show(parseFilter('a = 1 && b = 2 || c = 3'))).toBe('((a = 1 && b = 2) || c = 3)')
    expect(show(parseFilter('(a = 1 || b = 2) && c = 3'))).toBe('((a = 1 || b = 2) && c = 3)')
    expect(show(parseFilter('((a=1))'))).toBe('a = 1')
  })

  it('reads every operator', () => {
    const ops = [
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
    ]
    for (const op of ops) {
      const expr = parseFilter(`a${op}1`)
      expect(expr).toMatchObject({ type: 'compare', op })
    }
  })

  it('decodes JSON-style escapes in both quote styles', () => {
    const value = (text: string) => {
      const expr = parseFilter(`a = ${text}`)
      return expr.type === 'compare' && expr.right.kind === 'text' ? expr.right.value : undefined
    }
    expect(value(`"it's \\"q\\""`)).toBe(`it's "q"`)
    expect(value(`'it\\'s "q"'`)).toBe(`it's "q"`)
    expect(value(`"a\\\\b\\nc\\td\\u00e9\\/"`)).toBe('a\\b\nc\td\u00e9/')
    expect(value(`"100\\%"`)).toBe('100\\%')
    expect(value(JSON.stringify('x\'"\\\n\u2028😀'))).toBe('x\'"\\\n\u2028😀')
    expect(value(`''`)).toBe('')
  })

  it('reads numbers, identifiers, modifiers and comments', () => {
    const expr = parseFilter(
      'n > -1.5 // the rest is a comment && x = 1\n && tags:length >= 2 && @request.auth.id != ""',
    )
    expect(expr.type).toBe('and')
    const items = (expr as { items: FilterExpr[] }).items
    expect(items).toHaveLength(3)
    expect(items[0]).toMatchObject({ right: { kind: 'number', value: -1.5 } })
    expect(items[1]).toMatchObject({
      left: { kind: 'identifier', path: ['tags'], modifier: 'length' },
    })
    expect(items[2]).toMatchObject({ left: { path: ['@request', 'auth', 'id'] } })
  })

  it('treats blank text and comments as the empty filter', () => {
    expect(parseFilter('')).toEqual({ type: 'and', items: [] })
    expect(parseFilter('  // nothing\n')).toEqual({ type: 'and', items: [] })
  })

  it.each([
    ['a =', 'unexpected end'],
    ['a 1', 'unexpected "1"'],
    ['= 1', 'unexpected "="'],
    ['a == 1', 'unknown operator "=="'],
    ['a = "x', 'unterminated text'],
    ['(a = 1', 'missing ")"'],
    ['a = 1)', 'unexpected ")"'],
    ['a = 1 &&', 'unexpected end'],
    ['a = 1 & b = 2', 'unexpected character "&"'],
    ['a = 1.', 'invalid number'],
    ['a = 1x', 'invalid number'],
    ['a = -', 'unexpected character "-"'],
    ['a = foo(1)', 'functions'],
    ['a:upper = 1', 'unknown modifier ":upper"'],
    ['a..b = 1', 'invalid identifier'],
    ['a = "\\u12"', 'invalid \\u escape'],
    ['()', 'unexpected ")"'],
    ["a = 'x'; DROP TABLE users", 'unexpected character ";"'],
  ])('rejects %j', (text, message) => {
    expect(() => parseFilter(text)).toThrow(FilterError)
    expect(() => parseFilter(text)).toThrow(message)
  })

  it('error messages start with "Invalid filter:" and end with a full stop', () => {
    try {
      parseFilter('a = ')
      expect.unreachable()
    } catch (err) {
      expect((err as Error).message).toMatch(/^Invalid filter: .+\.$/)
    }
  })

  it('enforces the length, expression and nesting limits', () => {
    expect(() => parseFilter(`a = "${'x'.repeat(3500)}"`)).toThrow('too long')
    const exprs = (n: number) => Array.from({ length: n }, (_, i) => `a=${i}`).join('&&')
    expect(() => parseFilter(exprs(200))).not.toThrow()
    expect(() => parseFilter(exprs(201))).toThrow('too many expressions')
    expect(() => parseFilter(`${'('.repeat(32)}a=1${')'.repeat(32)}`)).not.toThrow()
    expect(() => parseFilter(`${'('.repeat(33)}a=1${')'.repeat(33)}`)).toThrow('nested too deeply')
    expect(() => parseFilter('('.repeat(3000))).toThrow(FilterError)
  })
})

describe('parseSort', () => {
  it('reads directions, paths and @random', () => {
    expect(parseSort('-created, title ,+id,@random,model.name')).toEqual([
      { field: { kind: 'identifier', name: 'created', path: ['created'] }, direction: 'desc' },
      { field: { kind: 'identifier', name: 'title', path: ['title'] }, direction: 'asc' },
      { field: { kind: 'identifier', name: 'id', path: ['id'] }, direction: 'asc' },
      { field: { kind: 'random' }, direction: 'asc' },
      {
        field: { kind: 'identifier', name: 'model.name', path: ['model', 'name'] },
        direction: 'asc',
      },
    ])
    expect(parseSort('')).toEqual([])
    expect(parseSort(',,')).toEqual([])
  })

  it.each([
    ['a,b,c,d,e,f,g,h,i', 'at most 8'],
    ['name desc', 'not a field name'],
    ['-', 'not a field name'],
    ["'x'", 'not a field name'],
    ['LENGTH(name)', 'not a field name'],
    [`${'a'.repeat(256)}`, 'too long'],
  ])('rejects %j', (text, message) => {
    expect(() => parseSort(text)).toThrow(FilterError)
    expect(() => parseSort(text)).toThrow(message)
    expect(() => parseSort(text)).toThrow(/^Invalid sort: /)
  })
})
