/**
 * @module The record filter API the records engine uses: compile a rule or a caller's filter or
 * sort for one collection into SQL (sharing one JoinSet per query), the owner check, and the
 * in-memory evaluation realtime uses. Collections are known by name; the main table is "r".
 */
import { sql, type RawBuilder } from 'kysely'
import type { CollectionDef } from '../collections/collection-def.ts'
import { findCollection } from '../collections/registry.ts'
import { compileFilterSql } from '../../tools/filter/compile.ts'
import { evaluateFilter } from '../../tools/filter/evaluate.ts'
import { FilterError, invalidFilter, invalidSort } from '../../tools/filter/filter-error.ts'
import { parseSort, type FilterExpr, type IdentifierOperand } from '../../tools/filter/parser.ts'
import { JoinSet } from './join-set.ts'
import { parseCached } from './paths.ts'
import type { QueryContext } from './query-context.ts'
import { RecordSqlResolver } from './record-sql-resolver.ts'
import { RecordValueResolver } from './record-value-resolver.ts'

export { JoinSet } from './join-set.ts'
export type { QueryContext } from './query-context.ts'

export interface CompileOptions {
  /** A caller-supplied filter or sort: no `@request.`/`@collection.`, hidden fields unknown,
   * private fields NULL unless owned, relations need the target's list rule. False for server rules. */
  client: boolean
}

function collectionOf(name: string): CollectionDef {
  const collection = findCollection(name)
  if (!collection) throw invalidFilter(`unknown collection "${name}"`)
  return collection
}

/** A boolean SQL expression; blank text compiles to TRUE. Throws FilterError. */
export function compileRecordFilter(
  collectionName: string,
  text: string | FilterExpr,
  ctx: QueryContext,
  joins: JoinSet,
  opts: CompileOptions,
): RawBuilder<unknown> {
  const collection = collectionOf(collectionName)
  const expr = typeof text === 'string' ? parseCached(text) : text
  if (opts.client) checkClientIdentifiers(expr)
  const resolver = new RecordSqlResolver(
    { collection, alias: joins.alias, joins },
    ctx,
    opts.client,
  )
  return compileFilterSql(expr, resolver)
}

/** ORDER BY items (ASC puts NULLs first and DESC last on both engines, like SQLite). */
export function compileRecordSort(
  collectionName: string,
  text: string,
  ctx: QueryContext,
  joins: JoinSet,
  opts: CompileOptions = { client: true },
): RawBuilder<unknown>[] {
  const collection = collectionOf(collectionName)
  const items = parseSort(text)
  const resolver = new RecordSqlResolver(
    { collection, alias: joins.alias, joins },
    ctx,
    opts.client,
  )
  return items.map((item) => {
    if (item.field.kind === 'random') return sql`RANDOM()`
    const field = item.field
    if (opts.client) checkIdentifier(field)
    let resolved
    try {
      resolved = resolver.resolve(field)
    } catch (err) {
      if (err instanceof FilterError && !err.forbidden) {
        throw new FilterError(err.message.replace(/^Invalid filter:/, 'Invalid sort:'))
      }
      throw err
    }
    if (resolved.multi || resolved.values) throw invalidSort(`"${field.name}" is multi-valued`)
    if (resolved.literal) throw invalidSort(`"${field.name}" is not a field`)
    const value =
      resolved.kind === 'text' && ctx.dialect === 'postgres'
        ? sql`${resolved.sql} COLLATE "C"`
        : resolved.sql
    return item.direction === 'desc' ? sql`${value} DESC NULLS LAST` : sql`${value} ASC NULLS FIRST`
  })
}

/** The collection's ownerRule as boolean SQL (full access), or null when it has none. */
export function compileOwnerCheck(
  collectionName: string,
  ctx: QueryContext,
  joins: JoinSet,
): RawBuilder<unknown> | null {
  const collection = collectionOf(collectionName)
  if (!collection.ownerRule) return null
  return compileRecordFilter(collection.name, collection.ownerRule, ctx, joins, { client: false })
}

/**
 * Evaluates a rule or filter against one record (column values as stored; bools as 0/1 or
 * booleans). Undefined when the answer needs the database (relation paths, back-relations), so the
 * caller falls back to SQL. Same semantics as the compiled SQL. Pass `{ client }` as for
 * compileRecordFilter; without it, hidden fields and private values the caller may not read give
 * undefined, so the SQL fallback (compiled with the right flag) decides.
 */
export function evaluateRecordFilter(
  collectionName: string,
  text: string | FilterExpr,
  record: Record<string, unknown>,
  ctx: QueryContext,
  opts?: CompileOptions,
): boolean | undefined {
  const collection = collectionOf(collectionName)
  const expr = typeof text === 'string' ? parseCached(text) : text
  if (opts?.client) checkClientIdentifiers(expr)
  return evaluateFilter(
    expr,
    new RecordValueResolver(collection, record, ctx, opts?.client ?? 'auto'),
  )
}

function checkClientIdentifiers(expr: FilterExpr) {
  if (expr.type !== 'compare') {
    for (const item of expr.items) checkClientIdentifiers(item)
    return
  }
  for (const operand of [expr.left, expr.right]) {
    if (operand.kind === 'identifier') checkIdentifier(operand)
  }
}

function checkIdentifier(operand: IdentifierOperand) {
  const [head] = operand.path
  if (head === '@request')
    throw new FilterError('Only superusers can filter by @request.', { forbidden: true })
  if (head === '@collection') {
    throw new FilterError('Only superusers can filter by @collection.', { forbidden: true })
  }
}
