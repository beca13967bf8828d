import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The real tiny GGUF models the tests run (stories260K, llama-2-tiny-random), kept in
 * `shared/models` beside the repository, as the coordinator's download mirror.
 */
export const modelMirror = fileURLToPath(new URL('../../../../shared/models/', import.meta.url))

export function requireTestModels(): void {
  if (!existsSync(join(modelMirror, 'stories260K.gguf')))
    throw new Error(`The test models are missing from ${modelMirror}`)
}
