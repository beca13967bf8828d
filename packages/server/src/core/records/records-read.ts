/**
 * @module Reading records: list (paged, filtered, sorted, rule-filtered) and view, with expand and
 * the owner flag that gates private fields. All SQL is built from parameterised fragments.
 */
import { sql, type CompiledQuery, type RawBuilder } from 'kysely'
import { ApiError, badRequest, forbidden, notFound } from '../../tools/api-error.ts'
import type { Database } from '../../db/database.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import {
  JoinSet,
  compileOwnerCheck,
  compileRecordFilter,
  compileRecordSort,
  type QueryContext,
} from '../rules/record-query.ts'
import { FilterError } from '../../tools/filter/filter-error.ts'
import type { Caller } from './caller.ts'
import { serializeRecord, type RecordJson, type Row } from './serialize.ts'

export interface ListQuery {
  page?: number
  perPage?: number
  sort?: string
  filter?: string
  skipTotal?: boolean
}

export interface ListResult<T = RecordJson> {
  items: T[]
  page: number
  perPage: number
  totalItems: number
  totalPages: number
}

export function queryContext(database: Database, caller: Caller, body?: Row): QueryContext {
  return { dialect: database.dialect, auth: caller.auth, body, now: new Date() }
}

/**
 * Compiled reads per caller: the rule, filter and sort of a read compile to the same SQL and
 * parameters for the same caller every time, unless they use the clock (`@now` ...). Kept per
 * users row object, which the auth cache replaces whenever the user changes (and a guest or
 * the server share one each), so what a rule read from `@request.auth.*` is always current.
 */
const compiledReads = new WeakMap<Database['db'], WeakMap<object, Map<string, CompiledQuery[]>>>()
const guestReads = {}
const serverReads = {}
const compiledPerCaller = 64

function readsOf(database: Database, caller: Caller): Map<string, CompiledQuery[]> {
  // Per Kysely instance: its dialect (and plugins) made the SQL.
  let byCaller = compiledReads.get(database.db)
  if (!byCaller) {
    byCaller = new WeakMap()
    compiledReads.set(database.db, byCaller)
  }
  const owner = caller.superuser ? serverReads : (caller.auth ?? guestReads)
  let reads = byCaller.get(owner)
  if (!reads) {
    reads = new Map()
    byCaller.set(owner, reads)
  }
  return reads
}

/** The compiled queries for `key`, built by `compile` with a context whose clock read is noticed:
 * those that read it are compiled anew each time. */
function compiledFor(
  database: Database,
  caller: Caller,
  key: string,
  compile: (ctx: QueryContext) => RawBuilder<unknown>[],
): CompiledQuery[] {
  const reads = readsOf(database, caller)
  const hit = reads.get(key)
  if (hit) return hit
  let clock = false
  let now: Date | undefined
  const ctx: QueryContext = { dialect: database.dialect, auth: caller.auth }
  Object.defineProperty(ctx, 'now', {
    get() {
      clock = true
      return (now ??= new Date())
    },
  })
  const compiled = compile(ctx).map((query) => query.compile(database.db))
  if (!clock) {
    if (reads.size >= compiledPerCaller) reads.clear()
    reads.set(key, compiled)
  }
  return compiled
}

/** Runs a compiled read: at once on SQLite's statement cache when it can, else through Kysely. */
async function read(database: Database, query: CompiledQuery): Promise<Row[]> {
  const rows = database.readNow?.(query)
  if (rows) return rows
  return (await database.db.executeQuery<Row>(query)).rows
}

/** readNow (db/database.ts) with runOrThrow's answer to a filter found too costly. */
function readNowOrThrow(database: Database, query: CompiledQuery): Row[] | undefined {
  try {
    return database.readNow?.(query)
  } catch (err) {
    if (err instanceof FilterError) throw badRequest(err.message, {}, err)
    throw err
  }
}

/** Runs a filter compile, turning language errors into the API's 400/403. */
export function compileOrThrow<T>(fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    if (err instanceof FilterError) {
      if ((err as FilterError & { forbidden?: boolean }).forbidden)
        throw new ApiError(403, err.message)
      throw badRequest(err.message, {}, err)
    }
    throw err
  }
}

/** Runs a query built from a filter: a filter found too costly while it runs (SQLite's LIKE
 * budget, db/database.ts) is the caller's 400 too. */
async function runOrThrow<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (err) {
    if (err instanceof FilterError) throw badRequest(err.message, {}, err)
    throw err
  }
}

function checkClientExpression(caller: Caller, text: string | undefined) {
  if (!text || caller.superuser) return
  if (text.includes('@request.')) throw forbidden('Only superusers can filter by @request.')
  if (text.includes('@collection.')) throw forbidden('Only superusers can filter by @collection.')
}

/** The WHERE pieces every read shares: the collection rule (unless superuser) and owner check. */
function ruleWhere(
  collection: CollectionDef,
  rule: string | null,
  caller: Caller,
  ctx: QueryContext,
  joins: JoinSet,
) {
  const where: RawBuilder<unknown>[] = []
  if (rule === null && !caller.superuser) throw forbidden()
  if (rule && !caller.superuser) {
    where.push(
      compileOrThrow(() =>
        compileRecordFilter(collection.name, rule, ctx, joins, { client: false }),
      ),
    )
  }
  return where
}

/**
 * Each condition once. A client's filter often repeats the rule (the chat sidebar's
 * `user = "<me>"` beside the rule's `user = @request.auth.id`), and SQLite evaluates a repeated
 * condition again for every row a COUNT visits (a third of the count's time over 2,000 rows).
 * Only exact repeats go: the same SQL with the same parameters, compiled alone.
 */
function distinctConditions(database: Database, where: RawBuilder<unknown>[]) {
  const seen = new Set<string>()
  return where.filter((condition) => {
    const { sql: text, parameters } = condition.compile(database.db)
    const key = `${text}\0${JSON.stringify(parameters)}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

function ownerColumn(collection: CollectionDef, caller: Caller, ctx: QueryContext, joins: JoinSet) {
  if (caller.superuser || !collection.ownerRule) return sql`1`
  const check = compileOwnerCheck(collection.name, ctx, joins)
  return check ? sql`CASE WHEN ${check} THEN 1 ELSE 0 END` : sql`0`
}

export function toJson(collection: CollectionDef, caller: Caller, row: Row): RecordJson {
  const owner = row.__owner === 1 || row.__owner === '1' || row.__owner === true
  const self = collection.type === 'auth' && caller.auth?.id === row.id
  return serializeRecord(collection, row, { owner, self, superuser: caller.superuser })
}

/** A list's paging and compiled statements, before anything is read. */
interface ListPlan {
  page: number
  perPage: number
  offset: number
  /** False for a page so far out that its offset is no exact integer: it has no rows. */
  exact: boolean
  rowsQuery: CompiledQuery
  countQuery?: CompiledQuery
}

function planList(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  query: ListQuery,
): ListPlan {
  const page = Math.max(1, Math.trunc(query.page ?? 1) || 1)
  let perPage = Math.trunc(query.perPage ?? 30) || 30
  if (perPage <= 0) perPage = 30
  if (perPage > 1000) perPage = 1000
  checkClientExpression(caller, query.filter)
  checkClientExpression(caller, query.sort)

  const offset = (page - 1) * perPage
  // A page so far out that its offset is no exact integer has no rows (and would overflow SQL's).
  const exact = Number.isSafeInteger(offset)
  const key = `list\0${collection.name}\0${query.filter ?? ''}\0${query.sort ?? ''}\0${perPage}\0${exact ? offset : 'x'}\0${query.skipTotal ? 1 : 0}`
  const [rowsQuery, countQuery] = compiledFor(database, caller, key, (ctx) => {
    const joins = new JoinSet()
    const where = ruleWhere(collection, collection.listRule, caller, ctx, joins)
    if (query.filter && query.filter.trim()) {
      const filter = query.filter
      where.push(
        compileOrThrow(() =>
          compileRecordFilter(collection.name, filter, ctx, joins, { client: !caller.superuser }),
        ),
      )
    }
    const order = query.sort?.trim()
      ? compileOrThrow(() => compileRecordSort(collection.name, query.sort!, ctx, joins))
      : defaultOrder(collection)
    const owner = ownerColumn(collection, caller, ctx, joins)
    const conditions = distinctConditions(database, where)
    const whereSql = conditions.length ? sql`WHERE ${sql.join(conditions, sql` AND `)}` : sql``
    const table = sql.table(collection.name)
    const queries: RawBuilder<unknown>[] = [
      sql<Row>`SELECT r.*, ${owner} AS __owner FROM ${table} AS r ${joins.sql()} ${whereSql}
    ORDER BY ${sql.join([...order, tiebreaker(query.sort)])} LIMIT ${exact ? perPage : 0} OFFSET ${exact ? offset : 0}`,
    ]
    if (!query.skipTotal) {
      queries.push(sql`SELECT COUNT(*) AS n FROM ${table} AS r ${joins.sql()} ${whereSql}`)
    }
    return queries
  })
  return { page, perPage, offset, exact, rowsQuery, countQuery }
}

/**
 * Whether the list needs its COUNT: a page short of perPage ends the list, so the total is
 * known without counting (the count repeats the whole filter over every row; it is the costlier
 * half of a hostile LIKE). An empty page past the first says nothing of what came before it.
 */
function needsCount(plan: ListPlan, rows: Row[]): boolean {
  if (!plan.countQuery) return false
  const lastPage =
    plan.exact && rows.length < plan.perPage && (rows.length > 0 || plan.offset === 0)
  return !lastPage
}

function listResult(
  collection: CollectionDef,
  caller: Caller,
  plan: ListPlan,
  rows: Row[],
  counted: number | undefined,
): ListResult {
  const totalItems = !plan.countQuery ? -1 : (counted ?? plan.offset + rows.length)
  return {
    items: rows.map((row) => toJson(collection, caller, row)),
    page: plan.page,
    perPage: plan.perPage,
    totalItems,
    totalPages: !plan.countQuery ? -1 : Math.ceil(totalItems / plan.perPage),
  }
}

const countOf = (rows: Row[]) => Number(rows[0]?.n ?? 0)

export async function listRecords(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  query: ListQuery,
): Promise<ListResult> {
  const plan = planList(database, caller, collection, query)
  const rows = plan.exact ? await runOrThrow(() => read(database, plan.rowsQuery)) : []
  const counted = needsCount(plan, rows)
    ? countOf(await runOrThrow(() => read(database, plan.countQuery!)))
    : undefined
  return listResult(collection, caller, plan, rows, counted)
}

/**
 * listRecords at once, without a promise: where the database can answer without waiting (SQLite
 * outside a transaction, db/database.ts `readNow`); undefined where only listRecords can.
 */
export function listRecordsNow(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  query: ListQuery,
): ListResult | undefined {
  if (!database.readNow) return undefined
  const plan = planList(database, caller, collection, query)
  let rows: Row[] = []
  if (plan.exact) {
    const read = readNowOrThrow(database, plan.rowsQuery)
    if (!read) return undefined
    rows = read
  }
  let counted: number | undefined
  if (needsCount(plan, rows)) {
    const read = readNowOrThrow(database, plan.countQuery!)
    if (!read) return undefined
    counted = countOf(read)
  }
  return listResult(collection, caller, plan, rows, counted)
}

/** Rows with equal sort keys come in id order, in the direction of the last sort term, so that
 * an index on (..., key, id) serves the whole ORDER BY. */
function tiebreaker(sort: string | undefined): RawBuilder<unknown> {
  const last = sort?.split(',').pop()?.trim() ?? ''
  return last.startsWith('-') ? sql`r.id DESC` : sql`r.id`
}

function defaultOrder(collection: CollectionDef): RawBuilder<unknown>[] {
  return collection.fields.some((f) => f.name === 'created') ? [sql`r.created`] : []
}

/** Fetch rows by id that pass `rule` for the caller (view rule for view/expand, others for writes). */
export async function fetchVisible(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  ids: string[],
  rule: string | null,
  body?: Row,
): Promise<Row[]> {
  if (ids.length === 0) return []
  // A write's rule may read the submitted body: compiled each time. Reads are compiled once.
  if (body) {
    const [query] = visibleQueries(
      collection,
      caller,
      ids,
      rule,
    )(queryContext(database, caller, body))
    return (await query.execute(database.db)).rows as Row[]
  }
  return read(database, visibleRead(database, caller, collection, ids, rule))
}

function visibleQueries(
  collection: CollectionDef,
  caller: Caller,
  ids: string[],
  rule: string | null,
) {
  return (ctx: QueryContext) => {
    const joins = new JoinSet()
    const where = ruleWhere(collection, rule, caller, ctx, joins)
    where.push(sql`r.id IN (${sql.join(ids)})`)
    const owner = ownerColumn(collection, caller, ctx, joins)
    return [
      sql<Row>`SELECT r.*, ${owner} AS __owner FROM ${sql.table(collection.name)} AS r
    ${joins.sql()} WHERE ${sql.join(where, sql` AND `)}`,
    ]
  }
}

/**
 * The compiled read of `ids`: compiled once per caller, collection, rule and number of ids, not
 * per id (a getOne of another record compiled its rule anew, and the ids of a caller's recent
 * reads pushed their other statements out). The ids are the statement's last parameters (its
 * last condition), so the ones it was compiled with are replaced by these.
 */
function visibleRead(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  ids: string[],
  rule: string | null,
): CompiledQuery {
  const key = viewKey(collection, rule, ids.length)
  const [compiled] = compiledFor(
    database,
    caller,
    key,
    visibleQueries(collection, caller, ids, rule),
  )
  const parameters = compiled.parameters.slice(0, compiled.parameters.length - ids.length)
  parameters.push(...ids)
  return { ...compiled, parameters }
}

/** The compiled reads' key of a read by id, made once per collection, rule and number of ids: a
 * key joined anew for every read had to be flattened and hashed again for the lookup. */
const viewKeys = new WeakMap<CollectionDef, Map<string | null, Map<number, string>>>()

function viewKey(collection: CollectionDef, rule: string | null, count: number): string {
  let byRule = viewKeys.get(collection)
  if (!byRule) viewKeys.set(collection, (byRule = new Map()))
  let byCount = byRule.get(rule)
  if (!byCount) byRule.set(rule, (byCount = new Map()))
  let key = byCount.get(count)
  if (!key) byCount.set(count, (key = `view\0${collection.name}\0${rule ?? '\u0001'}\0${count}`))
  return key
}

export async function viewRecord(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  id: string,
): Promise<RecordJson> {
  const [row] = await fetchVisible(database, caller, collection, [id], collection.viewRule)
  if (!row) throw notFound()
  return toJson(collection, caller, row)
}

/** viewRecord at once, without a promise, where the database can answer without waiting (as
 * listRecordsNow); undefined where only viewRecord can. */
export function viewRecordNow(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  id: string,
): RecordJson | undefined {
  if (!database.readNow) return undefined
  // One id, the primary key: at most one row.
  const rows = database.readNow(
    visibleRead(database, caller, collection, [id], collection.viewRule),
    true,
  ) as Row[] | undefined
  if (!rows) return undefined
  if (!rows[0]) throw notFound()
  return toJson(collection, caller, rows[0])
}
