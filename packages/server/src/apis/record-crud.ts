/**
 * @module /api/collections/{collection}/records[/{id}]: PocketBase's records API.
 */
import type { Context, Hono } from 'hono'
import type { CoreApp } from '../core/app.ts'
import { requireCollection } from '../core/collections/registry.ts'
import {
  FieldsError,
  parseFields,
  pickFields,
  topLevelKeys,
} from '../core/records/fields-picker.ts'
import type { CollectionDef } from '../core/collections/collection-def.ts'
import { badRequest, tooManyRequests } from '../tools/api-error.ts'
import { jsonLongerThan } from '../tools/json-shape.ts'
import { callerOf, clientAddress } from './caller.ts'
import { readBody } from './request-body.ts'

/** The route patterns of a list and of one record (the access log names them). */
export const RECORDS_ROUTE = '/api/collections/:collection/records'
export const RECORD_ROUTE = `${RECORDS_ROUTE}/:id`

export function bindRecordCrud(app: Hono, core: CoreApp) {
  const base = RECORDS_ROUTE
  // Sign-ups per client address per hour (MESHWORK_SIGNUP_LIMIT): each new account is given
  // credits. Counted before the account is created, so parallel sign-ups cannot pass together;
  // one that fails validation gives its count back.
  const signups = core.limits.create('signup', {
    points: core.config.signupLimit ?? 0,
    windowSeconds: 3600,
  })
  const signUp = async <T>(address: string, create: () => Promise<T>): Promise<T> => {
    const taken = await signups.take(address)
    if (!taken.allowed) throw tooManyRequests(taken.retryAfterMs)
    try {
      return await create()
    } catch (err) {
      await signups.refund(address)
      throw err
    }
  }

  app.get(base, async (c) => {
    const collection = requireCollection(c.req.param('collection'))
    checkFields(c, collection)
    const caller = await callerOf(c, core.auth)
    const q = c.req.query()
    const result = await core.records.list(caller, collection, listOptions(q), q.expand)
    return respond(c, result)
  })

  app.get(RECORD_ROUTE, async (c) => {
    const collection = requireCollection(c.req.param('collection'))
    checkFields(c, collection)
    const caller = await callerOf(c, core.auth)
    return respond(
      c,
      await core.records.view(caller, collection, c.req.param('id'), c.req.query('expand')),
    )
  })

  app.post(base, async (c) => {
    const collection = requireCollection(c.req.param('collection'))
    checkFields(c, collection)
    const caller = await callerOf(c, core.auth)
    const body = await readBody(c)
    const create = () => core.records.create(caller, collection, body, c.req.query('expand'))
    return respond(
      c,
      collection.type === 'auth' ? await signUp(clientAddress(c), create) : await create(),
    )
  })

  app.patch(`${base}/:id`, async (c) => {
    const collection = requireCollection(c.req.param('collection'))
    checkFields(c, collection)
    const caller = await callerOf(c, core.auth)
    const body = await readBody(c)
    const id = c.req.param('id')
    const update = () => core.records.update(caller, collection, id, body, c.req.query('expand'))
    // A password change checks `oldPassword` against the stored one: a guess, counted as a
    // sign-in attempt on the account (a stolen token must not guess the password without limit).
    const guess =
      collection.type === 'auth' &&
      !caller.superuser &&
      caller.auth !== null &&
      String(caller.auth.id) === id &&
      typeof (body as Record<string, unknown> | null)?.password === 'string' &&
      (body as Record<string, unknown>).password !== ''
    if (!guess) return respond(c, await update())
    const attempt = await core.auth.passwordAttempt(String(caller.auth!.email), clientAddress(c))
    const updated = await update()
    await attempt.succeeded()
    return respond(c, updated)
  })

  app.delete(`${base}/:id`, async (c) => {
    const collection = requireCollection(c.req.param('collection'))
    const caller = await callerOf(c, core.auth)
    await core.records.delete(caller, collection, c.req.param('id'))
    return c.body(null, 204)
  })
}

/** A malformed `fields` parameter, or (for records) one naming keys a record does not have, is a
 * 400 before anything runs. */
export function checkFields(c: Context, collection?: CollectionDef) {
  const fields = c.req.query('fields')
  if (!fields) return null
  let pick: ReturnType<typeof parseFields>
  try {
    pick = parseFields(fields)
  } catch (err) {
    if (err instanceof FieldsError) throw badRequest(err.message)
    throw err
  }
  if (pick && collection) {
    const known = new Set(['*', 'id', 'collectionId', 'collectionName', 'expand'])
    for (const f of collection.fields) if (!f.hidden) known.add(f.name)
    const unknown = topLevelKeys(pick).find((key) => !known.has(key))
    if (unknown) throw badRequest(`Invalid fields: unknown field "${unknown}".`)
  }
  return pick
}

/** JSON response with the `fields` parameter applied (2xx only, as PocketBase does). */
export function respond(c: Context, data: unknown) {
  const pick = checkFields(c)
  let out = data
  if (
    pick &&
    data &&
    typeof data === 'object' &&
    'items' in data &&
    Array.isArray((data as { items: unknown[] }).items)
  ) {
    const list = data as { items: unknown[] }
    out = { ...list, items: list.items.map((item) => pickFields(item, pick)) }
  } else if (pick) out = pickFields(data, pick)
  checkResponseSize(out)
  return c.json(out)
}

/**
 * Expand can multiply a page many times over (each item carrying the same large related
 * records); serialising tens of MB would hold the event loop, so such an answer is refused.
 */
export function checkResponseSize(out: unknown): void {
  if (jsonLongerThan(out)) {
    throw badRequest(
      'The response would be too large: ask for fewer records (perPage), expands or fields.',
    )
  }
}

/** A list's paging, sort and filter from its query parameters (400 for malformed numbers). */
export function listOptions(q: Record<string, string | undefined>) {
  return {
    page: intParam(q.page, 'page'),
    perPage: intParam(q.perPage, 'perPage'),
    sort: q.sort,
    filter: q.filter,
    skipTotal: boolParam(q.skipTotal),
  }
}

function intParam(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined
  const n = Number(value)
  if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n))
    throw badRequest(`Invalid ${name} parameter.`)
  return n
}

const truthy = new Set(['1', 't', 'T', 'TRUE', 'true', 'True'])
const falsy = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False'])

function boolParam(value: string | undefined): boolean {
  if (value === undefined || value === '') return false
  if (truthy.has(value)) return true
  if (falsy.has(value)) return false
  throw badRequest('Invalid skipTotal parameter.')
}
