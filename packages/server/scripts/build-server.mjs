// Compiles the coordinator to one JavaScript file, packages/server/dist/main.js, so that
// `npm start` runs plain JavaScript (no tsx at run time). Our workspaces (server, protocol, the
// node agent for the built-in node) are compiled in; third-party packages stay imports of
// node_modules (node-llama-cpp is native, and only the built-in node and the tokenizers load it,
// on demand). Each source file's `import.meta.url` becomes its own file's URL, taken relative to
// the bundle, so the paths it builds from it (the web app, the built-in models, the agent
// package) stay where they were.
// Usage: node packages/server/scripts/build-server.mjs [output .js path]
import { readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { build } from 'esbuild'

const serverDir = new URL('..', import.meta.url).pathname
const packagesDir = join(serverDir, '..')
const output = resolve(process.argv[2] ?? join(serverDir, 'dist/main.js'))

const manifest = (dir) => JSON.parse(readFileSync(join(packagesDir, dir, 'package.json'), 'utf8'))
/** Every third-party package our compiled-in workspaces import. */
const thirdParty = new Set(
  ['server', 'protocol', 'node'].flatMap((dir) => {
    const m = manifest(dir)
    return Object.keys({
      ...m.dependencies,
      ...m.optionalDependencies,
      ...m.peerDependencies,
    }).filter((name) => !name.startsWith('@meshwork/'))
  }),
)

const ownUrls = {
  name: 'own-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /[\\/]packages[\\/](server|protocol|node)[\\/]src[\\/].*\.ts$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8')
      if (!source.includes('import.meta.url')) return undefined
      const fromBundle = relative(dirname(output), args.path).split('\\').join('/')
      const own = `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`
      return { contents: source.replaceAll('import.meta.url', own), loader: 'ts' }
    })
  },
}

await build({
  entryPoints: [join(serverDir, 'src/main.ts')],
  outfile: output,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: [...thirdParty, ...[...thirdParty].map((name) => `${name}/*`)],
  plugins: [ownUrls],
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
})
console.log(`Compiled the coordinator: ${relative(process.cwd(), output)}`)
