/**
 * @module The model files that ship in `packages/server/builtin-models/` (the demo model), used
 * when a model's catalogue source cannot be reached. A file counts only when its sha256 is the
 * catalogue's, so a built-in copy never stands in for a different model.
 */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const defaultBuiltinModelsDir = fileURLToPath(
  new URL('../../../builtin-models', import.meta.url),
)

export interface BuiltinFile {
  path: string
  size: number
}

/** Finds built-in files by name and checks their sha256 (computed once per file and size). */
export class BuiltinModels {
  readonly #hashes = new Map<string, Promise<string | null>>()

  constructor(readonly dir: string = defaultBuiltinModelsDir) {}

  /** The built-in copy of `fileName` when its sha256 is `sha256`; null otherwise. */
  async find(fileName: string, sha256: string): Promise<BuiltinFile | null> {
    const path = join(this.dir, basename(fileName))
    const info = await stat(path).catch(() => null)
    if (!info?.isFile() || !/^[0-9a-f]{64}$/i.test(sha256)) return null
    const key = `${path}:${info.size}:${info.mtimeMs}`
    let hash = this.#hashes.get(key)
    if (!hash) {
      hash = sha256File(path).catch(() => null)
      this.#hashes.set(key, hash)
    }
    return (await hash) === sha256.toLowerCase() ? { path, size: info.size } : null
  }
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
  return hash.digest('hex')
}
