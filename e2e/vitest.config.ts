import { defineConfig } from 'vitest/config'

// Browser tests: a real coordinator and Debian's Chromium, one file at a time (2-core machines).
export default defineConfig({
  test: {
    name: 'e2e',
    include: ['tests/**/*.test.ts'],
    globalSetup: ['harness/global-setup.ts'],
    // Coordinators started by tests log warnings and errors only (no access lines).
    env: { MESHWORK_LOG_LEVEL: process.env.MESHWORK_LOG_LEVEL ?? 'warn' },
    testTimeout: 90_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
})
