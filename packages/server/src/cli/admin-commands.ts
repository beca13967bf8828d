/**
 * @module What the admin command line does, as functions over the database: grant or debit
 * credits by email (credit_admin / debit_admin ledger entries) and add or edit catalogue models.
 * There is no admin UI (spec section 6); this is the operator's tool.
 */
import type { Db } from '../db/database.ts'
import { sql } from 'kysely'
import { nowDate } from '../tools/dates.ts'
import { newRecordId } from '../tools/ids.ts'
import { fromUnits, toUnits } from '../core/ledger/credits.ts'
import { findUserByEmail, isSystemEmail } from '../core/auth/email-identity.ts'
import { isEmail } from '../tools/email.ts'
import { applyEntry } from '../core/ledger/ledger-entry.ts'
import { RecordEvents } from '../core/records/record-events.ts'
import { withUnitOfWork } from '../core/records/unit-of-work.ts'
import {
  fileNameOf,
  resolveModelSource,
  SourceResolveError,
  type ResolvedSource,
} from '../core/models/resolve-model-source.ts'

export class AdminInputError extends Error {
  override name = 'AdminInputError'
}

export async function adjustCredits(
  db: Db,
  input: { email: string; amount: number; direction: 'credit' | 'debit'; description?: string },
): Promise<{ user: string; balanceAfter: number }> {
  if (!(input.amount > 0) || !Number.isFinite(input.amount))
    throw new AdminInputError('The amount must be a positive number')
  const units = exactUnits(input.amount, 'The amount')
  // The same case-insensitive match as sign-up and sign-in, so a look-alike can never be credited.
  const user = await findUserByEmail(db, input.email)
  if (!user) throw new AdminInputError(`No user with the email ${input.email}`)
  const credit = input.direction === 'credit'
  // No subscriber lives in this process: the unit of work publishes to nobody.
  const result = await withUnitOfWork({ database: { db }, events: new RecordEvents() }, (uow) =>
    applyEntry(uow, {
      user: String(user.id),
      type: credit ? 'credit_admin' : 'debit_admin',
      amount: units,
      description: input.description || (credit ? 'Admin credit' : 'Admin debit'),
    }),
  )
  return { user: String(user.id), balanceAfter: fromUnits(result.balanceAfter) }
}

/** Credits as exact units, or the operator's error (never silently rounded). */
function exactUnits(value: number, what: string): number {
  try {
    return toUnits(value)
  } catch {
    throw new AdminInputError(`${what} has at most 3 decimal places`)
  }
}

/**
 * Gives an account (found by its current address, ignoring case, or by its id) a new address:
 * the way back for an account migration 0004 renamed. The address must be valid, free (ignoring
 * case) and outside the system's reserved domain. Answers the user id.
 */
export async function setEmail(db: Db, current: string, next: string): Promise<string> {
  const email = next.trim()
  if (!isEmail(email)) throw new AdminInputError(`Not an e-mail address: ${next}`)
  if (isSystemEmail(email)) throw new AdminInputError(`${email} is in the system's reserved domain`)
  const user =
    (await findUserByEmail(db, current)) ??
    (await db.selectFrom('users').selectAll().where('id', '=', current.trim()).executeTakeFirst())
  if (!user) throw new AdminInputError(`No user with the email or id ${current}`)
  const taken = await findUserByEmail(db, email)
  if (taken && taken.id !== user.id)
    throw new AdminInputError(`${email} belongs to another account`)
  await db
    .updateTable('users')
    .set({ email, updated: nowDate() })
    .where('id', '=', user.id)
    .execute()
  return String(user.id)
}

/** The accounts migration 0004 renamed (look-alike or reserved addresses), with their address now. */
export async function listRenamedEmails(db: Db) {
  return db
    .selectFrom('_email_renames as r')
    .leftJoin('users as u', 'u.id', 'r.user')
    .select(['r.user', 'r.original_email', 'r.reason', 'u.email'])
    .orderBy('r.created')
    .execute()
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
  // Stored in thousandths, like credits.
  if (m.credit_multiplier !== undefined)
    out.credit_multiplier = exactUnits(m.credit_multiplier, 'The multiplier')
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
  await refuseTakenFileName(db, fileName)
  const id = newRecordId()
  const now = nowDate()
  await db
    .insertInto('models')
    .values({
      id,
      display_name: model.name,
      credit_multiplier: toUnits(1),
      is_active: 1,
      ...columns(model),
      file_name: fileName,
      created: now,
      updated: now,
    })
    .execute()
  return id
}

export interface AddByUrlResult {
  id: string
  name: string
  /** What the source said; null when it could not be asked (the coordinator pins it later). */
  resolved: ResolvedSource | null
  /** Why the source could not tell size and sha256, when it could not. */
  warning?: string
}

/**
 * Adds a model from its source URL alone: the name and file name come from the URL, the size and
 * sha256 from the source's headers (the hub's X-Linked-Size / X-Linked-Etag). Options given
 * explicitly win. When the source cannot be asked now, the model is added unpinned and the
 * coordinator pins it the first time a node asks for it.
 */
export async function addModelByUrl(
  db: Db,
  url: string,
  model: ModelInput = {},
  resolve: (url: string) => Promise<ResolvedSource> = resolveModelSource,
): Promise<AddByUrlResult> {
  if (!/^https?:\/\//.test(url)) throw new AdminInputError('The URL must be http(s)')
  const fileName = model.file_name ?? fileNameOf(url)
  const name = model.name ?? fileName.replace(/\.gguf$/i, '')
  if (!name) throw new AdminInputError(`No file name in ${url}: pass --name`)
  let resolved: ResolvedSource | null = null
  let warning: string | undefined
  try {
    resolved = await resolve(url)
    if (!resolved.sha256 && !model.sha256)
      warning =
        'The source publishes no sha256: nodes will not download it until you add one (model-edit --sha256).'
  } catch (err) {
    if (!(err instanceof SourceResolveError)) throw err
    warning = `${err.message} The coordinator reads the size and sha256 the first time a node asks for it.`
  }
  const id = await addModel(db, {
    ...model,
    name,
    display_name: model.display_name ?? name,
    source_url: url,
    file_name: fileName,
    sha256: model.sha256 ?? resolved?.sha256 ?? undefined,
    file_size_bytes: model.file_size_bytes ?? resolved?.sizeBytes,
  })
  return { id, name, resolved, warning }
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
  if (changes.file_name !== undefined) await refuseTakenFileName(db, changes.file_name, row.id)
  await db
    .updateTable('models')
    .set({ ...values, updated: nowDate() })
    .where('id', '=', row.id)
    .execute()
  return String(row.id)
}

/**
 * Nodes keep each model in a file of its catalogue file name and take a file of the right size as
 * already downloaded: two models of one file name would overwrite each other's file on a node, and
 * one could then load the other's weights. Compared ignoring case, as on macOS and Windows disks.
 */
async function refuseTakenFileName(db: Db, fileName: string, exceptId?: unknown) {
  if (!fileName) return
  let query = db
    .selectFrom('models')
    .select('name')
    .where(sql<boolean>`lower(file_name) = ${fileName.toLowerCase()}`)
  if (exceptId !== undefined) query = query.where('id', '!=', String(exceptId))
  const taken = await query.executeTakeFirst()
  if (taken)
    throw new AdminInputError(
      `The file name ${fileName} is model ${taken.name}'s already: nodes keep models by file name (pass --file-name)`,
    )
}

/** The catalogue, with multipliers as the API shows them (1.5, not 1500 units). */
export async function listModels(db: Db) {
  const rows = await db
    .selectFrom('models')
    .selectAll()
    .orderBy('sort_order')
    .orderBy('name')
    .execute()
  return rows.map((m): Record<string, unknown> => ({
    ...m,
    credit_multiplier: fromUnits(Number(m.credit_multiplier)),
  }))
}
