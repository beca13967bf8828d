/**
 * Polls `check` until it gives a truthy value, and returns that value; throws
 * "Timed out waiting for <what>" once `timeoutMs` has passed. For conditions another process
 * (a coordinator, an agent, a browser) brings about, where no event says when.
 */
export async function waitUntil<T>(
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}
