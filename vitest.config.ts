import { defineConfig } from 'vitest/config'

// One run for the whole monorepo: each package (and e2e) is a project with its own config, plus
// the tests of the lint configuration (scripts/lint.test.ts).
export default defineConfig({
  test: {
    projects: [
      'packages/*',
      'e2e',
      { test: { name: 'lint', include: ['scripts/**/*.test.ts'], environment: 'node' } },
    ],
  },
})
