import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    name: 'server',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Coordinators started by tests log warnings and errors only (no access lines).
    env: { MESHWORK_LOG_LEVEL: process.env.MESHWORK_LOG_LEVEL ?? 'warn' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
