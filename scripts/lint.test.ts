/**
 * Tests of the lint configuration itself: each checker fails on a planted violation
 * (scripts/lint-fixtures/), so a config change that silently turns a rule off is caught.
 * `npm run lint` on the real tree is the other half (it must pass).
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ESLint } from 'eslint'
import * as prettier from 'prettier'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..')
const fixtures = join(root, 'scripts/lint-fixtures')

describe('lint configuration', () => {
  it('dependency-cruiser refuses a low layer importing a high one, a feature importing a feature, a cycle and a peek into the server', () => {
    const run = spawnSync(
      process.execPath,
      [
        join(root, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs'),
        'packages',
        '--config',
        join(root, '.dependency-cruiser.cjs'),
        '--output-type',
        'err',
      ],
      { cwd: join(fixtures, 'layers'), encoding: 'utf8' },
    )
    expect(run.status).not.toBe(0)
    // One line per violation: `error <rule>: <from> → <to>` (cycles list their members below).
    const found = run.stdout.replace(/ →\s+/g, ' -> ')
    expect(found).toContain(
      'error server-tools-is-a-leaf: packages/server/src/tools/low.ts -> packages/server/src/core/high.ts',
    )
    expect(found).toContain(
      'error web-features-are-independent: packages/web/src/features/chat/a.ts -> packages/web/src/features/nodes/b.ts',
    )
    expect(found).toContain(
      'error no-server-internals-from-other-packages: packages/node/src/peek.ts -> packages/server/src/core/high.ts',
    )
    expect(found).toContain('error no-circular:')
  }, 60_000)

  it('ESLint refuses a floating promise (type-aware rules are on)', async () => {
    // ignore: false because the fixtures are ignored by the real run, which must pass.
    const eslint = new ESLint({ cwd: root, ignore: false })
    const [result] = await eslint.lintFiles([join(fixtures, 'floating-promise.ts')])
    const rules = result.messages.map((m) => m.ruleId ?? m.message)
    expect(rules).toContain('@typescript-eslint/no-floating-promises')
  }, 120_000)

  it('Prettier --check refuses an unformatted file with the project config', async () => {
    const file = join(fixtures, 'unformatted.ts')
    const options = await prettier.resolveConfig(file)
    expect(options).toMatchObject({ semi: false, singleQuote: true })
    const text = readFileSync(file, 'utf8')
    expect(await prettier.check(text, { ...options, filepath: file })).toBe(false)
    const formatted = await prettier.format(text, { ...options, filepath: file })
    expect(await prettier.check(formatted, { ...options, filepath: file })).toBe(true)
  })
})
