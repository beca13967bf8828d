/**
 * @module The last line for promises nobody caught. Every promise in the coordinator is awaited
 * or caught (`npm run check:promises`, and test/db-faults.test.ts asserts no rejection goes
 * unhandled while the database fails), so this handler only fires on a bug. Node's default would
 * end the process, and with it every other user's stream, for one forgotten `.catch`; this logs
 * the bug loudly and keeps serving (the request it belonged to is ended by restart recovery or
 * the hold sweep at worst). A synchronous uncaught exception still ends the process (Node's
 * default): its state is unknown.
 */
import { log } from './log.ts'

export function logUnhandledRejections(label: string): void {
  process.on('unhandledRejection', (reason) => {
    log.error(
      { err: reason, label },
      'UNHANDLED PROMISE REJECTION (a bug: every promise must be awaited or caught); the process goes on',
    )
  })
}
