/**
 * @module The admin command line: `npm run admin -w @meshwork/server -- <command> ...`, on the
 * database the environment names (MESHWORK_DATA_DIR or DATABASE_URL, like the server).
 *
 *   credit <email> <amount> [--description TEXT]
 *   debit <email> <amount> [--description TEXT]
 *   models
 *   model-add --url U [--name N] [...]   (size and sha256 read from the source)
 *   model-add --name N [--display-name D] [--description T] [--source-url U] [--file-name F]
 *             [--sha256 H] [--size BYTES] [--multiplier X] [--sort-order N]
 *   model-edit <id-or-name> [the same options] [--active true|false]
 *   audit
 *   set-email <current-email-or-user-id> <new-email>
 *   renamed-emails
 *   nodes
 *   trust <node-id> / untrust <node-id>
 */
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { configFromEnv } from '../config.ts'
import { auditLedger, formatAudit } from '../core/ledger/audit.ts'
import { openDatabase } from '../db/database.ts'
import { migrateToLatest } from '../db/migrate.ts'
import {
  AdminInputError,
  addModel,
  addModelByUrl,
  adjustCredits,
  editModel,
  listModels,
  listRenamedEmails,
  setEmail,
  type ModelInput,
} from './admin-commands.ts'
import { listNodes, setTrusted } from './node-trust.ts'

const usage = `Usage: npm run admin -w @meshwork/server -- <command>
  credit <email> <amount> [--description TEXT]     grant credits (credit_admin)
  debit <email> <amount> [--description TEXT]      take credits (debit_admin)
  models                                           list the catalogue
  model-add --url U [--name N] [--display-name D] [--multiplier X] [--sort-order N] ...
                                                   add a model by its URL alone: name and file
                                                   name from the URL, size and sha256 from the
                                                   source (the Hugging Face hub's headers)
  model-add --name N [--display-name D] [--description T] [--source-url U] [--file-name F]
            [--sha256 H] [--size BYTES] [--multiplier X] [--sort-order N]
  model-edit <id-or-name> [the same options] [--active true|false]
  audit                                            check the ledger's invariants (exit 1 if broken)
  set-email <current-email-or-user-id> <new-email> give an account an address (renamed look-alikes)
  renamed-emails                                   accounts migration 0004 renamed, with their old address
  nodes                                            list nodes and their verification
  trust <node-id>                                  make a node a reference (scores canaries)
  untrust <node-id>                                back on probation`

function parseCommandLine() {
  try {
    return parseArgs({ allowPositionals: true, options })
  } catch (err) {
    // An unknown or malformed option: say which, show the usage, no stack trace.
    console.error(`${err instanceof Error ? err.message : String(err)}\n\n${usage}`)
    process.exit(1)
  }
}

const options = {
  description: { type: 'string' },
  name: { type: 'string' },
  'display-name': { type: 'string' },
  'source-url': { type: 'string' },
  url: { type: 'string' },
  'file-name': { type: 'string' },
  sha256: { type: 'string' },
  size: { type: 'string' },
  multiplier: { type: 'string' },
  'sort-order': { type: 'string' },
  active: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const
const { values, positionals } = parseCommandLine()

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
if (values.help || command === 'help') {
  console.log(usage)
  process.exit(0)
}
if (!command) {
  console.error(usage)
  process.exit(1)
}

const config = configFromEnv()
// `npm run admin -w @meshwork/server` runs inside packages/server; a relative data directory means
// the directory npm was started from (INIT_CWD), where `npm start` keeps its ./data too.
config.dataDir = resolve(process.env.INIT_CWD ?? process.cwd(), config.dataDir)
// An operator's command may take longer than a request may (an audit of a large ledger).
const database = await openDatabase({
  url: config.databaseUrl,
  dataDir: config.dataDir,
  schema: config.databaseSchema,
  noTimeouts: true,
})
let code = 0
try {
  await migrateToLatest(database.db, config.databaseSchema)
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
    case 'model-add': {
      if (!values.url) {
        console.log(`Added model ${await addModel(database.db, modelInput())}`)
        break
      }
      const added = await addModelByUrl(database.db, values.url, modelInput())
      const facts = added.resolved
        ? ` (${added.resolved.sizeBytes} bytes${added.resolved.sha256 ? `, sha256 ${added.resolved.sha256}` : ''})`
        : ''
      console.log(`Added model ${added.id} ${added.name}${facts}`)
      if (added.warning) console.warn(added.warning)
      break
    }
    case 'model-edit':
      if (!args[0]) throw new AdminInputError('model-edit needs a model id or name')
      console.log(
        `Updated model ${await editModel(database.db, args[0], { ...modelInput(), description: values.description })}`,
      )
      break
    case 'audit': {
      const report = await auditLedger(database.db)
      console.log(formatAudit(report))
      if (!report.ok) code = 1
      break
    }
    case 'set-email': {
      const [current, next] = args
      if (!current || !next)
        throw new AdminInputError('set-email needs the current e-mail (or user id) and the new one')
      console.log(
        `Account ${await setEmail(database.db, current, next)} now signs in as ${next.trim()}`,
      )
      break
    }
    case 'renamed-emails':
      for (const r of await listRenamedEmails(database.db)) {
        console.log(`${r.user}  ${r.original_email}  (${r.reason})  now ${r.email}`)
      }
      break
    case 'nodes':
      for (const n of await listNodes(database.db)) {
        console.log(
          `${n.id}  ${n.device_name}  ${n.owner ?? '-'}  ${n.status}  ${n.verification}  reputation ${Number(n.reputation).toFixed(1)}  ${n.backend || '-'}  canaries ${n.passed}/${Number(n.passed) + Number(n.failed)}  spot checks failed ${Number(n.spot_failed)}/${Number(n.spot_checks)}`,
        )
      }
      break
    case 'trust':
    case 'untrust': {
      if (!args[0]) throw new AdminInputError(`${command} needs a node id`)
      const name = await setTrusted(database.db, args[0], command === 'trust')
      console.log(
        command === 'trust'
          ? `Node ${args[0]} (${name}) is trusted: it scores other nodes' canaries`
          : `Node ${args[0]} (${name}) is no longer trusted: back on probation`,
      )
      break
    }
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
