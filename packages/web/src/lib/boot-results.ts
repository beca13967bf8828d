/**
 * @module Answers to requests that `boot.ts` made before the app's code had run, handed over once
 * to whoever asks for them first (the first screen's queries, the session refresh). Plain module:
 * no imports, so the boot entry stays tiny.
 */

/** A request's outcome as boot.ts saw it; `body` is the parsed JSON ({} when there was none). */
export interface BootResponse {
  ok: boolean
  status: number
  body: unknown
}

type BootRegistry = Map<string, Promise<BootResponse>>

function registry(): BootRegistry {
  const g = globalThis as { __meshworkBoot?: BootRegistry }
  g.__meshworkBoot ??= new Map()
  return g.__meshworkBoot
}

export function putBoot(key: string, answer: Promise<BootResponse>): void {
  // Nobody may ever ask (another screen opened): a failure must not be an unhandled rejection.
  answer.catch(() => {})
  registry().set(key, answer)
}

/** The answer stored under `key`, once; undefined when boot.ts did not ask (or it was taken). */
export function takeBoot(key: string): Promise<BootResponse> | undefined {
  const answer = registry().get(key)
  registry().delete(key)
  return answer
}
