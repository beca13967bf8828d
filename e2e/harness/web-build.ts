/**
 * @module The web app as the browser tests serve it: a production build of packages/web into
 * e2e/dist (git-ignored), made by the suite itself, so a build someone else starts in
 * packages/web/dist while the suite runs cannot pull files from under it.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url))
export const webRoot = join(repoRoot, 'packages/web')
export const webDist = join(repoRoot, 'e2e/dist')

function newestMtime(path: string): number {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  let newest = 0
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)))
  return newest
}

/** True when the build is missing or any source, public file or build config is newer than it. */
export function webDistIsStale(dist = webDist): boolean {
  const index = join(dist, 'index.html')
  if (!existsSync(index)) return true
  const built = statSync(index).mtimeMs
  const inputs = [
    'src',
    'public',
    'build-plugins',
    'index.html',
    'vite.config.ts',
    'package.json',
  ].map((p) => join(webRoot, p))
  return inputs.some((p) => existsSync(p) && newestMtime(p) > built)
}

/** Builds packages/web into `outDir` with the package's own Vite config (the same as `npm run build`). */
export function buildWeb(outDir = webDist): void {
  execFileSync('npx', ['vite', 'build', '--outDir', outDir, '--emptyOutDir'], {
    cwd: webRoot,
    // Vitest sets NODE_ENV=test, which would give a development build of React.
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
}

/** The node agent package as the suite's coordinators serve it (git-ignored, rebuilt each run). */
export const agentPackage = join(repoRoot, 'e2e/agent/dist/meshwork-node.tgz')

/** Packs packages/node the way `npm start` does (packages/node/scripts/pack-agent.mjs). */
export function packAgent(out = agentPackage): void {
  execFileSync(process.execPath, [join(repoRoot, 'packages/node/scripts/pack-agent.mjs'), out], {
    stdio: ['ignore', 'ignore', 'inherit'],
  })
}
