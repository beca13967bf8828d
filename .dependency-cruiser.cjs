// Layer and cycle rules from shared/design/architecture.md, checked by `npm run lint:deps`.
// An arrow A <- B means B may import A, never the reverse.
//   server:  tools <- db <- core <- apis <- main (main.ts, server.ts, config.ts, cli/, local-node/)
//   web:     lib/hooks/components/context <- features/<name> <- routes; no feature imports another
//   node:    inference <- agent <- cli
//   nobody outside packages/server imports the server's internals (only its package entry, and the
//   test harnesses that start a real coordinator).
const server = '^packages/server/src/'
const mainLevel = `${server}(main|server|config)\\.ts$|${server}(cli|local-node)/`

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import cycles make the load order matter and hide layering mistakes.',
      from: {},
      to: { circular: true, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'server-tools-is-a-leaf',
      severity: 'error',
      comment:
        'tools/ has no domain knowledge: it imports node, third-party code and other tools only.',
      from: { path: `${server}tools/` },
      to: { path: `${server}(db|core|apis)/|${mainLevel}` },
    },
    {
      name: 'server-db-below-core',
      severity: 'error',
      comment: 'db/ imports tools only.',
      from: { path: `${server}db/` },
      to: { path: `${server}(core|apis)/|${mainLevel}` },
    },
    {
      name: 'server-core-has-no-http',
      severity: 'error',
      comment: 'core/ imports db and tools; it knows nothing of HTTP, SSE or the composition root.',
      from: { path: `${server}core/` },
      to: { path: `${server}apis/|${mainLevel}`, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'server-apis-below-main',
      severity: 'error',
      comment: 'apis/ is mounted by main; it does not import the composition root.',
      from: { path: `${server}apis/` },
      to: { path: mainLevel, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-server-internals-from-other-packages',
      severity: 'error',
      comment:
        'Other packages talk to the coordinator over the wire (types from packages/protocol).',
      from: { path: '^packages/(protocol|web|node)/' },
      to: { path: '^packages/server/' },
    },
    {
      name: 'protocol-imports-nothing-of-ours',
      severity: 'error',
      from: { path: '^packages/protocol/' },
      to: { path: '^packages/(server|web|node)/|^e2e/|^bench/' },
    },
    {
      name: 'web-features-are-independent',
      severity: 'error',
      comment: 'A feature imports lib/hooks/components, never another feature.',
      from: { path: '^packages/web/src/features/([^/]+)/' },
      to: { path: '^packages/web/src/features/', pathNot: '^packages/web/src/features/$1/' },
    },
    {
      name: 'web-shared-below-features',
      severity: 'error',
      comment:
        'lib/hooks/components/context are shared by features and must not reach up into them.',
      from: { path: '^packages/web/src/(lib|hooks|components|context)/' },
      to: { path: '^packages/web/src/(features|routes)/' },
    },
    {
      name: 'node-inference-is-the-bottom',
      severity: 'error',
      from: { path: '^packages/node/src/inference/' },
      to: { path: '^packages/node/src/(agent|cli)/' },
    },
    {
      name: 'node-agent-below-cli',
      severity: 'error',
      from: { path: '^packages/node/src/agent/' },
      to: { path: '^packages/node/src/cli/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: require('node:path').join(__dirname, 'tsconfig.base.json') },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
}
