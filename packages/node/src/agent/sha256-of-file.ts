/**
 * @module sha256-of-file
 * The sha256 of a file, read as a stream: a model of many gigabytes is never held in memory, and
 * the event loop gets a turn after every piece (hashing 1 MiB takes a few milliseconds).
 */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'

/** Hashes `path` from its first byte to its last; rejects when `signal` aborts. */
export async function sha256OfFile(path: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha256')
  const stream = createReadStream(path, { highWaterMark: 2 ** 20, signal })
  for await (const chunk of stream) hash.update(chunk as Buffer)
  return hash.digest('hex')
}
