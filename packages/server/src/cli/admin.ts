/**
 * @module The admin command line: `npm run admin -w @meshwork/server -- <command> ...`, on the
 * database the environment names (MESHWORK_DATA_DIR or DATABASE_URL, like the server).
 *
 *   credit <email> <amount> [--description TEXT]
 *   debit <email> <amount> [--description TEXT]
 *   models
 *   model-add --name N [--display-name D] [--description T] [--source-url U] [--file-name F]
 *             [--sha256 H] [--size BYTES] [--multiplier X] [--sort-order N]
 *   model-edit <id-or-name> [the same options] [--active true|false]
 */
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { configFromEnv } from '../config.ts'
import { openDatabase } from '../db/database.ts'
import { migrateToLatest } from '../db/migrate.ts'
import {
  AdminInputError,
  addModel,
  adjustCredits,
  editModel,
  listModels,
  type ModelInput,
} from './admin-commands.ts'

const usage = `Usage: npm run admin -w @meshwork/server -- <command>
  credit <email> <amount> [--description TEXT]     grant credits (credit_admin)
  debit <email> <amount> [--description TEXT]      take credits (debit_admin)
  models                                           list the catalogue
  model-add --name N [--display-name D] [--description T] [--source-url U] [--file-name F]
            [--sha256 H] [--size BYTES] [--multiplier X] [--sort-order N]
  model-edit <id-or-name> [the same options] [--active true|false]`

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    description: { type: 'string' },
    name: { type: 'string' },
    'display-name': { type: 'string' },
    'source-url': { type: 'string' },
    'file-name': { type: 'string' },
    sha256: { type: 'string' },
    size: { type: 'string' },
    multiplier: { type: 'string' },
    'sort-order': { type: 'string' },
    active: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
})

const num = (v: string | undefined) => (v === undefined ? undefined : Number(v))
const modelInput = (): ModelInput => ({
  name: values.name,
  display_name: values['display-name'],
  description: values.description,
  source_url: values['source-url'],
  file_name: values['file-name'],
  sha256: values.sha256,
  file_size_bytes: num(values.size),
  credit_multiplier: num(values.multiplier),
  sort_order: num(values['sort-order']),
  is_active: values.active === undefined ? undefined : values.active === 'true',
})

const [command, ...args] = positionals
if (!command || values.help) {
  console.log(usage)
  process.exit(command ? 0 : 1)
}

const config = configFromEnv()
// `npm run admin -w @meshwork/server` runs inside packages/server; a relative data directory means
// the directory npm was started from (INIT_CWD), where `npm start` keeps its ./data too.
config.dataDir = resolve(process.env.INIT_CWD ?? process.cwd(), config.dataDir)
const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir })
let code = 0
try {
  await migrateToLatest(database.db)
  switch (command) {
    case 'credit':
    case 'debit': {
      const [email, amount] = args
      if (!email || !amount) throw new AdminInputError(`${command} needs an email and an amount`)
      const r = await adjustCredits(database.db, {
        email,
        amount: Number(amount),
        direction: command,
        description: values.description,
      })
      console.log(
        `${command === 'credit' ? 'Credited' : 'Debited'} ${amount} for ${email}; balance now ${r.balanceAfter}`,
      )
      break
    }
    case 'models':
      for (const m of await listModels(database.db)) {
        console.log(
          `${m.id}  ${m.name}  x${m.credit_multiplier}  ${m.is_active ? 'active' : 'inactive'}  ${m.file_name}  ${m.source_url}`,
        )
      }
      break
    case 'model-add':
      console.log(`Added model ${await addModel(database.db, modelInput())}`)
      break
    case 'model-edit':
      if (!args[0]) throw new AdminInputError('model-edit needs a model id or name')
      console.log(
        `Updated model ${await editModel(database.db, args[0], { ...modelInput(), description: values.description })}`,
      )
      break
    default:
      throw new AdminInputError(`Unknown command ${command}\n${usage}`)
  }
} catch (err) {
  code = 1
  console.error(err instanceof Error && err.name !== 'Error' ? err.message : err)
} finally {
  await database.close()
}
process.exit(code)
