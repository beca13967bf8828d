/**
 * @module Reading records: list (paged, filtered, sorted, rule-filtered) and view, with expand and
 * the owner flag that gates private fields. All SQL is built from parameterised fragments.
 */
import { sql, type RawBuilder } from 'kysely'
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

export async function listRecords(
  database: Database,
  caller: Caller,
  collection: CollectionDef,
  query: ListQuery,
): Promise<ListResult> {
  const page = Math.max(1, Math.trunc(query.page ?? 1) || 1)
  let perPage = Math.trunc(query.perPage ?? 30) || 30
  if (perPage <= 0) perPage = 30
  if (perPage > 1000) perPage = 1000
  checkClientExpression(caller, query.filter)
  checkClientExpression(caller, query.sort)

  const ctx = queryContext(database, caller)
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
  const whereSql = where.length ? sql`WHERE ${sql.join(where, sql` AND `)}` : sql``
  const table = sql.table(collection.name)

  const offset = (page - 1) * perPage
  const rowsQuery = sql<Row>`SELECT r.*, ${owner} AS __owner FROM ${table} AS r ${joins.sql()} ${whereSql}
    ORDER BY ${sql.join([...order, tiebreaker(query.sort)])} LIMIT ${perPage} OFFSET ${offset}`
  // A page so far out that its offset is no exact integer has no rows (and would overflow SQL's).
  const rows = Number.isSafeInteger(offset)
    ? (await runOrThrow(() => rowsQuery.execute(database.db))).rows
    : []
  let totalItems = -1
  let totalPages = -1
  if (!query.skipTotal) {
    const countQuery = sql<{
      n: number
    }>`SELECT COUNT(*) AS n FROM ${table} AS r ${joins.sql()} ${whereSql}`
    totalItems = Number((await runOrThrow(() => countQuery.execute(database.db))).rows[0]?.n ?? 0)
    totalPages = Math.ceil(totalItems / perPage)
  }
  return {
    items: rows.map((row) => toJson(collection, caller, row)),
    page,
    perPage,
    totalItems,
    totalPages,
  }
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
  const ctx = queryContext(database, caller, body)
  const joins = new JoinSet()
  const where = ruleWhere(collection, rule, caller, ctx, joins)
  where.push(sql`r.id IN (${sql.join(ids)})`)
  const owner = ownerColumn(collection, caller, ctx, joins)
  const query = sql<Row>`SELECT r.*, ${owner} AS __owner FROM ${sql.table(collection.name)} AS r
    ${joins.sql()} WHERE ${sql.join(where, sql` AND `)}`
  return (await query.execute(database.db)).rows
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
