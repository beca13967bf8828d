// Builds the installable node agent: compiles packages/node (with @meshwork/protocol compiled in)
// to plain JavaScript with esbuild, writes a package.json whose dependencies are the agent's
// third-party ones (node-llama-cpp, ws, yargs, zod), and packs it with `npm pack` into
// packages/node/dist/meshwork-node.tgz, the file the coordinator serves at
// /downloads/meshwork-node.tgz. No tsx at run time.
// Usage: node packages/node/scripts/pack-agent.mjs [output .tgz path]
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { build } from 'esbuild'

const pkgDir = new URL('..', import.meta.url).pathname
const output = resolve(process.argv[2] ?? join(pkgDir, 'dist/meshwork-node.tgz'))
const dist = dirname(output)
const stage = join(dist, `package-${process.pid}`)
const source = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'))

/** The agent's own runtime dependencies: the workspace packages are compiled in, tsx is not needed. */
const runtime = Object.fromEntries(
  Object.entries(source.dependencies).filter(
    ([name]) => !name.startsWith('@meshwork/') && name !== 'tsx',
  ),
)

rmSync(stage, { recursive: true, force: true })
mkdirSync(join(stage, 'bin'), { recursive: true })

await build({
  entryPoints: { cli: join(pkgDir, 'src/cli/cli.ts'), index: join(pkgDir, 'src/index.ts') },
  outdir: join(stage, 'dist'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Third-party packages stay dependencies (node-llama-cpp is native); only our code is compiled in.
  external: Object.keys(runtime),
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
})

writeFileSync(
  join(stage, 'bin/meshwork-node.js'),
  "#!/usr/bin/env node\nimport '../dist/cli.js'\n",
  { mode: 0o755 },
)
writeFileSync(
  join(stage, 'package.json'),
  `${JSON.stringify(
    {
      name: source.name,
      version: source.version,
      description:
        'Meshwork node agent: serve language models to a Meshwork network and earn credits',
      type: 'module',
      bin: { 'meshwork-node': 'bin/meshwork-node.js' },
      exports: { '.': './dist/index.js' },
      files: ['bin', 'dist', 'README.md'],
      engines: { node: '>=20' },
      dependencies: runtime,
    },
    null,
    2,
  )}\n`,
)
copyFileSync(join(pkgDir, 'README.md'), join(stage, 'README.md'))

const pack = spawnSync('npm', ['pack', '--silent', '--pack-destination', dist], {
  cwd: stage,
  encoding: 'utf8',
})
if (pack.status !== 0) {
  process.stderr.write(pack.stderr)
  process.exit(pack.status ?? 1)
}
const packed = pack.stdout.trim().split('\n').pop()
renameSync(join(dist, packed), output)
rmSync(stage, { recursive: true, force: true })
console.log(`Packed the node agent: ${output}`)
