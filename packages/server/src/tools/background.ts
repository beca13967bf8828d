/**
 * @module Work nobody awaits, and listeners nobody should be hurt by. Every promise in the
 * coordinator is awaited or caught (`npm run check:promises` enforces it); these are the two ways
 * to do so for fire-and-forget work:
 *
 * - `background(promise, what)`: a rejection is logged with what failed, never left unhandled
 *   (Node ends the process on an unhandled rejection).
 * - `callEach(listeners, ...)`: every listener runs, each on its own: one that throws (or whose
 *   promise rejects) is logged and the others still run, and the caller (a write that has already
 *   committed) never sees the error.
 */
import { log } from './log.ts'

/** Lets `promise` run on; a rejection is logged as `<what> failed`. */
export function background(promise: PromiseLike<unknown>, what: string): void {
  Promise.resolve(promise).catch((err: unknown) => log.error({ err }, `${what} failed`))
}

/** Calls each listener with `args`, each isolated from the others and from the caller. */
export function callEach<A extends unknown[]>(
  listeners: Iterable<(...args: A) => unknown>,
  args: A,
  what: string,
): void {
  for (const listener of listeners) {
    try {
      const result = listener(...args)
      if (result && typeof (result as PromiseLike<unknown>).then === 'function')
        background(result as PromiseLike<unknown>, what)
    } catch (err) {
      log.error({ err }, `${what} failed`)
    }
  }
}

/** Runs `run`; an exception is logged as `<what> failed` instead of thrown to the caller (an
 * event emitter's, where it would end the process). */
export function guarded(what: string, run: () => void): void {
  try {
    run()
  } catch (err) {
    log.error({ err }, `${what} failed`)
  }
}
