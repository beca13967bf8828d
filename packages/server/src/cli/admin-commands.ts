/**
 * @module What the admin command line does, as functions over the database: grant or debit
 * credits by email (credit_admin / debit_admin ledger entries) and add or edit catalogue models.
 * There is no admin UI (spec section 6); this is the operator's tool.
 */
import type { Db } from '../db/database.ts'
import { nowDate } from '../tools/dates.ts'
import { newRecordId } from '../tools/ids.ts'
import { applyEntry } from '../core/ledger/ledger-entry.ts'

export class AdminInputError extends Error {
  override name = 'AdminInputError'
}

export async function adjustCredits(
  db: Db,
  input: { email: string; amount: number; direction: 'credit' | 'debit'; description?: string },
): Promise<{ user: string; balanceAfter: number }> {
  if (!(input.amount > 0) || !Number.isFinite(input.amount))
    throw new AdminInputError('The amount must be a positive number')
  const user = await db
    .selectFrom('users')
    .select('id')
    .where('email', '=', input.email.trim().toLowerCase())
    .executeTakeFirst()
  if (!user) throw new AdminInputError(`No user with the email ${input.email}`)
  const credit = input.direction === 'credit'
  const result = await db.transaction().execute((trx) =>
    applyEntry(trx, {
      user: String(user.id),
      type: credit ? 'credit_admin' : 'debit_admin',
      amount: input.amount,
      description: input.description || (credit ? 'Admin credit' : 'Admin debit'),
    }),
  )
  return { user: String(user.id), balanceAfter: result.balanceAfter }
}

export interface ModelInput {
  name?: string
  display_name?: string
  description?: string
  file_name?: string
  source_url?: string
  sha256?: string
  file_size_bytes?: number
  credit_multiplier?: number
  sort_order?: number
  is_active?: boolean
}

function validate(model: ModelInput) {
  if (model.sha256 !== undefined && !/^[0-9a-f]{64}$/i.test(model.sha256))
    throw new AdminInputError('sha256 must be 64 hex digits')
  if (model.credit_multiplier !== undefined && !(model.credit_multiplier >= 0))
    throw new AdminInputError('The multiplier must be >= 0')
  if (model.file_size_bytes !== undefined && !(model.file_size_bytes >= 0))
    throw new AdminInputError('The size must be >= 0')
  if (model.source_url !== undefined && model.source_url && !/^https?:\/\//.test(model.source_url))
    throw new AdminInputError('The source URL must be http(s)')
}

const columns = (m: ModelInput) => {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(m))
    if (v !== undefined) out[k] = k === 'is_active' ? (v ? 1 : 0) : v
  if (m.sha256) out.sha256 = m.sha256.toLowerCase()
  return out
}

/** Adds a catalogue model; the file name defaults to the last part of the source URL. */
export async function addModel(db: Db, model: ModelInput): Promise<string> {
  if (!model.name) throw new AdminInputError('A model needs a name')
  validate(model)
  const exists = await db
    .selectFrom('models')
    .select('id')
    .where('name', '=', model.name)
    .executeTakeFirst()
  if (exists)
    throw new AdminInputError(`A model named ${model.name} exists already (use model-edit)`)
  const fileName =
    model.file_name ??
    (model.source_url
      ? decodeURIComponent(new URL(model.source_url).pathname.split('/').pop() ?? '')
      : '')
  const id = newRecordId()
  const now = nowDate()
  await db
    .insertInto('models')
    .values({
      id,
      display_name: model.name,
      credit_multiplier: 1,
      is_active: 1,
      ...columns(model),
      file_name: fileName,
      created: now,
      updated: now,
    })
    .execute()
  return id
}

/** Edits a catalogue model found by id or name. */
export async function editModel(db: Db, idOrName: string, changes: ModelInput): Promise<string> {
  validate(changes)
  const row = await db
    .selectFrom('models')
    .select('id')
    .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]))
    .executeTakeFirst()
  if (!row) throw new AdminInputError(`No model ${idOrName}`)
  const values = columns(changes)
  if (!Object.keys(values).length) throw new AdminInputError('Nothing to change')
  await db
    .updateTable('models')
    .set({ ...values, updated: nowDate() })
    .where('id', '=', row.id)
    .execute()
  return String(row.id)
}

export async function listModels(db: Db) {
  return db.selectFrom('models').selectAll().orderBy('sort_order').orderBy('name').execute()
}
