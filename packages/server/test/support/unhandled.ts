/**
 * @module What went unhandled while a suite ran: unhandled rejections and uncaught exceptions in
 * the test process, where the coordinators under test run. Each is a bug (an uncaught exception
 * ends a coordinator; main.ts logs an unhandled rejection and goes on).
 */
import { afterAll, beforeAll } from 'vitest'

/**
 * Called in a `describe` body: collects every unhandled rejection and uncaught exception from the
 * suite's `beforeAll` to its `afterAll`, for its cases to check (`expect(unhandled).toEqual([])`).
 */
export function unhandledDuringSuite(): unknown[] {
  const unhandled: unknown[] = []
  const note = (reason: unknown) => unhandled.push(reason)
  beforeAll(() => {
    process.on('unhandledRejection', note)
    process.on('uncaughtException', note)
  })
  afterAll(() => {
    process.off('unhandledRejection', note)
    process.off('uncaughtException', note)
  })
  return unhandled
}
