// `npm start`: builds the web app, the node agent package (served at
// /downloads/meshwork-node.tgz) and the coordinator's JavaScript (packages/server/dist/main.js)
// when missing or older than their sources, then runs the compiled coordinator on its embedded
// defaults. Development and the tests run the TypeScript sources through tsx instead.
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

// The coordinator, compiled: the server with protocol and the agent (for the built-in node) in it.
const serverBundle = join(root, 'packages/server/dist/main.js')
const serverSources = ['server/src', 'protocol/src', 'node/src', 'server/scripts'].map((d) =>
  join(root, 'packages', d),
)
const serverBuilt = existsSync(serverBundle) ? statSync(serverBundle).mtimeMs : 0
const serverNewest = Math.max(
  ...serverSources.filter((d) => existsSync(d)).map(newestMtime),
  ...['server', 'protocol', 'node'].map(
    (d) => statSync(join(root, 'packages', d, 'package.json')).mtimeMs,
  ),
)
if (serverNewest > serverBuilt) {
  console.log('Compiling the coordinator...')
  const compile = spawnSync(
    process.execPath,
    [join(root, 'packages/server/scripts/build-server.mjs'), serverBundle],
    { cwd: root, stdio: 'inherit' },
  )
  if (compile.status !== 0) process.exit(compile.status ?? 1)
}

const server = spawn(process.execPath, ['--enable-source-maps', serverBundle], {
  cwd: root,
  stdio: 'inherit',
})
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.kill(signal))
server.on('exit', (code) => process.exit(code ?? 0))
