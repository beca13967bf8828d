/**
 * @module Writing records through the API: create, update and delete with PocketBase's rule
 * semantics (create: 400, update/delete: 404), validation, cascades; each write one unit of work
 * (unit-of-work.ts), its events published after commit.
 */
import type { Database, Db } from '../../db/database.ts'
import { isUniqueViolation } from '../../db/unique-violation.ts'
import { ApiError, forbidden, notFound, validationError } from '../../tools/api-error.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'
import type { CollectionDef } from '../collections/collection-def.ts'
import { collections, findCollection } from '../collections/registry.ts'
import { emailKey, emailKeySql } from '../auth/email-identity.ts'
import { prepareAuthCreate, prepareAuthUpdate } from './auth-fields.ts'
import type { Caller } from './caller.ts'
import { castRecordBody, defaultRow, missingRequired } from './record-body.ts'
import type { RecordEvents } from './record-events.ts'
import type { RecordHooks } from './record-hooks.ts'
import { fetchVisible } from './records-read.ts'
import type { Row } from './serialize.ts'
import { withSingleWrite, withUnitOfWork, type UnitOfWork } from './unit-of-work.ts'

export interface WriteDeps {
  database: Database
  events: RecordEvents
  hooks: RecordHooks
}

const createFailed = 'Failed to create record.'
const updateFailed = 'Failed to update record.'

function assertWritable(collection: CollectionDef) {
  if (collection.type === 'view') throw new ApiError(400, 'Unsupported collection type.')
}

export async function createRecord(
  deps: WriteDeps,
  caller: Caller,
  collection: CollectionDef,
  body: Row,
): Promise<Row> {
  assertWritable(collection)
  if (collection.createRule === null && !caller.superuser) throw forbidden()
  const cast = castRecordBody(collection, body, { mode: 'create', superuser: caller.superuser })
  const now = nowDate()
  let row: Row = { ...defaultRow(collection), ...cast.values, id: cast.values.id ?? newRecordId() }
  if (collection.ownerField && !row[collection.ownerField] && caller.auth)
    row[collection.ownerField] = caller.auth.id
  for (const f of collection.fields) if (f.type === 'autodate') row[f.name] = now
  if (collection.type === 'auth') {
    const prepared = await prepareAuthCreate(body, row, caller.superuser)
    if (Object.keys(prepared.formErrors).length)
      throw validationError(createFailed, prepared.formErrors)
    row = prepared.values
  }
  const errors = { ...missingRequired(collection, row), ...cast.errors }
  Object.assign(errors, await relationErrors(deps.database.db, collection, row))
  Object.assign(
    errors,
    await uniqueErrors(deps.database.db, collection, row, cast.values.id != null),
  )
  if (Object.keys(errors).length) throw validationError(createFailed, errors)

  // Nothing to check after the insert and no hook to run: one statement, no transaction.
  const alone =
    (caller.superuser || !collection.createRule) && !deps.hooks.hasAfterCreate(collection)
  return (alone ? withSingleWrite : withUnitOfWork)(deps, async (uow) => {
    const stored = await uow.insert(collection.name, row).catch((err) => {
      throw uniqueViolation(err, collection, createFailed) ?? err
    })
    if (collection.createRule && !caller.superuser) {
      const db = { ...deps.database, db: uow.trx }
      const [visible] = await fetchVisible(
        db,
        caller,
        collection,
        [row.id as string],
        collection.createRule,
        body,
      )
      if (!visible) throw new ApiError(400, createFailed)
    }
    await deps.hooks.runAfterCreate(uow, collection, stored)
    return stored
  })
}

export async function updateRecord(
  deps: WriteDeps,
  caller: Caller,
  collection: CollectionDef,
  id: string,
  body: Row,
): Promise<Row> {
  assertWritable(collection)
  if (collection.updateRule === null && !caller.superuser) throw forbidden()
  const [existing] = await fetchVisible(
    deps.database,
    caller,
    collection,
    [id],
    caller.superuser ? '' : collection.updateRule,
    body,
  )
  if (!existing) throw notFound()
  delete existing.__owner
  const cast = castRecordBody(collection, body, {
    mode: 'update',
    superuser: caller.superuser,
    existing,
  })
  let values = cast.values
  if (collection.type === 'auth') {
    const prepared = await prepareAuthUpdate(body, values, existing, caller.superuser)
    if (Object.keys(prepared.formErrors).length)
      throw validationError(updateFailed, prepared.formErrors)
    values = prepared.values
  }
  const row: Row = { ...existing, ...values }
  for (const f of collection.fields)
    if (f.type === 'autodate' && f.onUpdate) values[f.name] = row[f.name] = nowDate()
  const errors = { ...missingRequired(collection, row), ...cast.errors }
  Object.assign(errors, await relationErrors(deps.database.db, collection, values))
  if (!caller.superuser)
    Object.assign(
      errors,
      await deps.hooks.checkClientUpdate(deps.database.db, collection, existing, values),
    )
  if (Object.keys(errors).length) throw validationError(updateFailed, errors)
  const [stored] = await withSingleWrite(deps, (uow) =>
    uow.update(collection.name, (q) => q.set(values).where('id', '=', id)),
  ).catch((err) => {
    throw uniqueViolation(err, collection, updateFailed) ?? err
  })
  // Deleted meanwhile: PocketBase's 404, as if it had not been found.
  if (!stored) throw notFound()
  return stored
}

export async function deleteRecord(
  deps: WriteDeps,
  caller: Caller,
  collection: CollectionDef,
  id: string,
): Promise<void> {
  assertWritable(collection)
  if (collection.deleteRule === null && !caller.superuser) throw forbidden()
  const [existing] = await fetchVisible(
    deps.database,
    caller,
    collection,
    [id],
    caller.superuser ? '' : collection.deleteRule,
  )
  if (!existing) throw notFound()
  delete existing.__owner
  await withUnitOfWork(deps, (uow) => deleteWithCascade(uow, deps.hooks, collection, existing))
}

/** Deletes a row and, first, every row whose cascading relation points at it. */
async function deleteWithCascade(
  uow: UnitOfWork,
  hooks: RecordHooks,
  collection: CollectionDef,
  row: Row,
) {
  const trx = uow.trx
  await hooks.runBeforeDelete(uow, collection, row)
  for (const other of collections) {
    if (other.type === 'view') continue
    for (const field of other.fields) {
      if (field.type !== 'relation' || field.collection !== collection.name || !field.cascadeDelete)
        continue
      const children = await trx
        .selectFrom(other.name)
        .selectAll()
        .where(field.name, '=', row.id)
        .execute()
      for (const child of children) await deleteWithCascade(uow, hooks, other, child as Row)
    }
  }
  await trx.deleteFrom(collection.name).where('id', '=', row.id).execute()
  uow.changed('delete', collection, row)
}

async function relationErrors(db: Db, collection: CollectionDef, values: Row) {
  const errors: Record<string, { code: string; message: string }> = {}
  for (const field of collection.fields) {
    const value = values[field.name]
    if (field.type !== 'relation' || !field.collection || typeof value !== 'string' || value === '')
      continue
    const target = findCollection(field.collection)!
    const found = await db
      .selectFrom(target.name)
      .select('id')
      .where('id', '=', value)
      .executeTakeFirst()
    if (!found)
      errors[field.name] = {
        code: 'validation_missing_rel_records',
        message: 'Failed to find all relation records with the provided ids.',
      }
  }
  return errors
}

async function uniqueErrors(db: Db, collection: CollectionDef, row: Row, idGiven: boolean) {
  const errors: Record<string, { code: string; message: string }> = {}
  const notUnique = { code: 'validation_not_unique', message: 'Value must be unique.' }
  // Case-insensitive by construction: every stored id is [a-z0-9] (generated, or checked against
  // recordIdPattern), so comparing with the lower-cased value uses the primary key. LOWER(id)
  // would scan the whole table on every create (66 ms per create at a million rows).
  // A generated id is 15 random characters: not worth a statement per create (should one ever
  // collide, the primary key refuses it and uniqueViolation answers the same 400).
  const taken =
    idGiven &&
    (await db
      .selectFrom(collection.name)
      .select('id')
      .where('id', '=', String(row.id).toLowerCase())
      .executeTakeFirst())
  if (taken) errors.id = notUnique
  if (collection.type === 'auth' && row.email) {
    // Unique ignoring case (the index idx_users_ci_email settles a race between two sign-ups).
    const dup = await db
      .selectFrom(collection.name)
      .select('id')
      .where(emailKeySql(db), '=', emailKey(row.email as string))
      .executeTakeFirst()
    if (dup) errors.email = notUnique
  }
  return errors
}

/** A unique index violation (a race the pre-checks could not see) as PocketBase's 400. */
function uniqueViolation(
  err: unknown,
  collection: CollectionDef,
  message: string,
): ApiError | null {
  if (!isUniqueViolation(err)) return null
  const e = err as { message?: string; constraint?: string }
  const text = `${e.constraint ?? ''} ${e.message ?? ''}`
  const field = collection.fields.find((f) =>
    new RegExp(`\\b(${collection.name}\\.)?${f.name}\\b|_${f.name}\\b`).test(text),
  )
  return validationError(message, {
    [field?.name ?? 'id']: { code: 'validation_not_unique', message: 'Value must be unique.' },
  })
}
