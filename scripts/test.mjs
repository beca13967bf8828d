// `npm test`: typechecks every package, then runs every test project (server on SQLite, and on
// PostgreSQL/Redis when TEST_DATABASE_URL/TEST_REDIS_URL are set; node agent; web; browser e2e).
// Prints a closing 'N passed, N failed' line.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts })

for (const dir of [
  'packages/protocol',
  'packages/server',
  'packages/node',
  'packages/test-kit',
  'packages/web',
  'e2e',
  'bench',
]) {
  if (!existsSync(join(root, dir, 'tsconfig.json'))) continue
  console.log(`typecheck: ${dir}`)
  const tsc = run('npx', ['tsc', '-p', dir])
  if (tsc.status !== 0) process.exit(tsc.status ?? 1)
}

mkdirSync(join(root, '.test-results'), { recursive: true })
const report = join(root, '.test-results/vitest.json')
const args = [
  'vitest',
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...process.argv.slice(2),
]
const vitest = run('npx', args)

if (existsSync(report)) {
  const result = JSON.parse(readFileSync(report, 'utf8'))
  const skipped = (result.numPendingTests ?? 0) + (result.numTodoTests ?? 0)
  console.log(
    `\n${result.numPassedTests} passed, ${result.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`,
  )
}
process.exit(vitest.status ?? 1)
