// `npm start`: builds the web app when its build is missing or older than its sources, then runs
// the coordinator (TypeScript straight from source through tsx) on its embedded defaults.
import { spawnSync, spawn } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const web = join(root, 'packages/web')
const dist = join(web, 'dist/index.html')

function newestMtime(dir) {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs)
  }
  return newest
}

const stale = !existsSync(dist) || newestMtime(join(web, 'src')) > statSync(dist).mtimeMs
if (stale && existsSync(join(web, 'src'))) {
  console.log('Building the web app...')
  const build = spawnSync('npm', ['run', 'build', '-w', '@meshwork/web'], { cwd: root, stdio: 'inherit' })
  if (build.status !== 0) process.exit(build.status ?? 1)
}

const server = spawn(process.execPath, ['--import', 'tsx', join(root, 'packages/server/src/main.ts')], {
  cwd: root,
  stdio: 'inherit',
})
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.kill(signal))
server.on('exit', (code) => process.exit(code ?? 0))
