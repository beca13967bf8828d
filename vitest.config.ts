import { defineConfig } from 'vitest/config'

// One run for the whole monorepo: each package (and e2e) is a project with its own config.
export default defineConfig({
  test: {
    projects: ['packages/*', 'e2e'],
  },
})
