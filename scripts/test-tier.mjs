// `npm run test:<tier>`: runs one tier of the suite (see CONTRIBUTING.md, "Running tests").
//   unit    no servers, no databases, no models: seconds
//   db      a coordinator, a database or a child process (SQLite; PostgreSQL/Redis too when TEST_DATABASE_URL/TEST_REDIS_URL are set)
//   models  loads a GGUF through node-llama-cpp (the built-in stories260K) or runs the agent on one
//   e2e     Chromium against a real coordinator (e2e/)
// A file's tier comes from what it uses (the markers below), so a new test needs no registration.
// `npm test` still runs everything; `node scripts/test-tier.mjs --list <tier>` prints the files.
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const models =
  /from 'node-llama-cpp'|LlamaEngine|getLlama|llama-(engine|score|chat)|startLocalNode|BuiltinModels|builtin-models|realNode|startAgent\b/
const db =
  /startTestServer|startServer|openTestDatabase|openDatabase|TEST_DATABASE_URL|dialects\b|spawn\(|fork\(|execFile/

function testFiles(dir) {
  const out = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.'))
      continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...testFiles(path))
    else if (/\.test\.tsx?$/.test(entry.name)) out.push(relative(root, path))
  }
  return out
}

export function tierOf(file) {
  if (file.startsWith('e2e/')) return 'e2e'
  if (file.startsWith('scripts/')) return 'lint'
  const text = readFileSync(join(root, file), 'utf8')
  if (models.test(text)) return 'models'
  if (db.test(text)) return 'db'
  return 'unit'
}

const args = process.argv.slice(2)
const list = args[0] === '--list'
const tier = list ? args[1] : args[0]
const tiers = ['unit', 'db', 'models', 'e2e', 'lint']
if (!tiers.includes(tier)) {
  console.error(`usage: node scripts/test-tier.mjs [--list] <${tiers.join('|')}> [vitest args]`)
  process.exit(2)
}
const files = ['packages', 'e2e', 'scripts']
  .flatMap((d) => testFiles(join(root, d)))
  .filter((f) => tierOf(f) === tier)
  .sort()
if (list) {
  console.log(files.join('\n'))
  process.exit(0)
}
const run = spawnSync('npx', ['vitest', 'run', ...files, ...args.slice(1)], {
  cwd: root,
  stdio: 'inherit',
})
process.exit(run.status ?? 1)
