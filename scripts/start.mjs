// `npm start`: builds the web app and the node agent package (served at
// /downloads/meshwork-node.tgz) when missing or older than their sources, then runs the
// coordinator (TypeScript straight from source through tsx) on its embedded defaults.
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
  const build = spawnSync('npm', ['run', 'build', '-w', '@meshwork/web'], {
    cwd: root,
    stdio: 'inherit',
  })
  if (build.status !== 0) process.exit(build.status ?? 1)
}

// The agent package: packages/node and packages/protocol compiled into one npm tarball.
const agentPackage = join(root, 'packages/node/dist/meshwork-node.tgz')
const agentSources = [
  join(root, 'packages/node/src'),
  join(root, 'packages/protocol/src'),
  join(root, 'packages/node/scripts'),
]
const agentBuilt = existsSync(agentPackage) ? statSync(agentPackage).mtimeMs : 0
const agentNewest = Math.max(
  ...agentSources.filter((d) => existsSync(d)).map(newestMtime),
  statSync(join(root, 'packages/node/package.json')).mtimeMs,
)
if (agentNewest > agentBuilt) {
  console.log('Packing the node agent...')
  const pack = spawnSync(process.execPath, [join(root, 'packages/node/scripts/pack-agent.mjs')], {
    cwd: root,
    stdio: 'inherit',
  })
  // Not fatal: the coordinator runs without it and its download route says what is missing.
  if (pack.status !== 0)
    console.error('Could not pack the node agent; /downloads/meshwork-node.tgz is unavailable.')
}

const server = spawn(
  process.execPath,
  ['--import', 'tsx', join(root, 'packages/server/src/main.ts')],
  {
    cwd: root,
    stdio: 'inherit',
  },
)
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.kill(signal))
server.on('exit', (code) => process.exit(code ?? 0))
