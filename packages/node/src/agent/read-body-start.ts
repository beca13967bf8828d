/**
 * @module read-body-start
 * Reads the start of an HTTP body and leaves the rest unread: a hostile or broken server may send
 * an endless body, and `res.text()` or `res.json()` would hold all of it in memory.
 */

/** Up to `limit` bytes of the body as text; `complete` is false when more was left unread. */
export async function readBodyStart(
  res: Response,
  limit: number,
): Promise<{ text: string; complete: boolean }> {
  const reader = res.body?.getReader()
  if (!reader) return { text: '', complete: true }
  const chunks: Uint8Array[] = []
  let length = 0
  let complete = false
  try {
    while (length <= limit) {
      const { done, value } = await reader.read()
      if (done) {
        complete = true
        break
      }
      chunks.push(value)
      length += value.length
    }
  } catch {
    // A body that breaks off counts for what it said so far.
  } finally {
    reader.cancel().catch(() => {})
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks).subarray(0, limit)), complete }
}

/** The body as JSON when it is whole, at most `limit` bytes and valid; otherwise null. */
export async function readJsonBody(res: Response, limit = 64 * 1024): Promise<unknown> {
  const { text, complete } = await readBodyStart(res, limit)
  if (!complete) return null
  try {
    return JSON.parse(text) as unknown
  } catch {
    return null
  }
}
