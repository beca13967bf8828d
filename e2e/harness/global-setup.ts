/**
 * @module Runs once before the browser tests: Chromium must exist (a missing browser fails the
 * suite instead of skipping it) and packages/web/dist must be built from the current sources.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { CHROMIUM_PATH, MissingChromiumError } from './browser.ts'
import { repoRoot, webDistIsStale } from './web-build.ts'

export default function setup() {
  if (!existsSync(CHROMIUM_PATH)) throw new MissingChromiumError()
  if (webDistIsStale()) {
    execFileSync('npm', ['run', 'build', '-w', '@meshwork/web'], { cwd: repoRoot, stdio: 'inherit' })
  }
}
