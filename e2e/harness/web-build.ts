/**
 * @module Where the built web app lives and whether it is older than its sources.
 */
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url))
export const webDist = join(repoRoot, 'packages/web/dist')
const webRoot = join(repoRoot, 'packages/web')

function newestMtime(path: string): number {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  let newest = 0
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)))
  return newest
}

/** True when dist is missing or any source, public file or build config is newer than it. */
export function webDistIsStale(): boolean {
  const index = join(webDist, 'index.html')
  if (!existsSync(index)) return true
  const built = statSync(index).mtimeMs
  const inputs = ['src', 'public', 'index.html', 'vite.config.ts', 'package.json'].map((p) => join(webRoot, p))
  return inputs.some((p) => existsSync(p) && newestMtime(p) > built)
}
