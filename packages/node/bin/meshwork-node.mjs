#!/usr/bin/env node
// Runs the TypeScript CLI from source through tsx (the project has no compile step).
import { register } from 'tsx/esm/api'

register()
await import('../src/cli/cli.ts')
