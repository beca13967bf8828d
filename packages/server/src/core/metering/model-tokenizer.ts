/**
 * @module The coordinator's own tokenizers: a catalogue model's vocabulary, loaded alone from its
 * GGUF file (node-llama-cpp's `vocabOnly`), when the file is on this machine (the model mirror or
 * the built-in node's models folder) and matches the catalogue's size and sha256. node-llama-cpp
 * is an optional dependency, imported on first use; without it, or without the file, answers are
 * metered from their text (answer-meter.ts).
 */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Db } from '../../db/database.ts'
import { log } from '../../tools/log.ts'

export interface ModelTokenizer {
  tokenize(text: string): number[]
  detokenize(ids: readonly number[]): string
  /** Ids are below this. */
  readonly vocabularySize: number
  /** UTF-8 length of the longest token: no answer of n tokens is longer than n times this. */
  readonly maxTokenBytes: number
}

type LlamaModule = typeof import('node-llama-cpp')
type Llama = Awaited<ReturnType<LlamaModule['getLlama']>>

export class Tokenizers {
  private cache = new Map<string, Promise<ModelTokenizer | null>>()
  private llama: Promise<Llama | null> | null = null

  constructor(
    private db: Db,
    /** Folders that may hold catalogue model files (by their `file_name`). */
    private dirs: string[],
  ) {}

  /** The model's tokenizer, or null when this coordinator cannot load it (cached either way). */
  get(modelId: string): Promise<ModelTokenizer | null> {
    let entry = this.cache.get(modelId)
    if (!entry) {
      entry = this.load(modelId).catch((err: unknown) => {
        log.error({ err, modelId }, 'tokenizer for model unavailable')
        return null
      })
      this.cache.set(modelId, entry)
    }
    return entry
  }

  async dispose(): Promise<void> {
    const llama = await this.llama
    this.cache.clear()
    await llama?.dispose().catch(() => {})
  }

  private async load(modelId: string): Promise<ModelTokenizer | null> {
    const model = await this.db
      .selectFrom('models')
      .select(['file_name', 'file_size_bytes', 'sha256'])
      .where('id', '=', modelId)
      .executeTakeFirst()
    if (!model?.file_name || !/^[0-9a-f]{64}$/i.test(String(model.sha256))) return null
    const path = await findFile(this.dirs, String(model.file_name), Number(model.file_size_bytes))
    if (!path || (await sha256(path)) !== String(model.sha256).toLowerCase()) return null
    const llama = await this.runtime()
    if (!llama) return null
    const vocab = await llama.loadModel({ modelPath: path, vocabOnly: true })
    return wrap(vocab)
  }

  private runtime(): Promise<Llama | null> {
    this.llama ??= import('node-llama-cpp')
      .then(({ getLlama, LlamaLogLevel }) =>
        // Vocabulary work only: the CPU build, no GPU probe, no log lines.
        getLlama({ build: 'never', gpu: false, logLevel: LlamaLogLevel.error, logger: () => {} }),
      )
      .catch((err: unknown) => {
        log.warn({ err }, 'node-llama-cpp is not available; answers are metered from their text')
        return null
      })
    return this.llama
  }
}

function wrap(vocab: Awaited<ReturnType<Llama['loadModel']>>): ModelTokenizer {
  type Token = Parameters<typeof vocab.detokenize>[0][number]
  let size = 0
  let maxTokenBytes = 1
  for (const token of vocab.iterateAllTokens()) {
    size++
    maxTokenBytes = Math.max(maxTokenBytes, Buffer.byteLength(vocab.detokenize([token], true)))
  }
  return {
    tokenize: (text) => vocab.tokenize(text),
    detokenize: (ids) => vocab.detokenize(ids as readonly Token[]),
    vocabularySize: size,
    maxTokenBytes,
  }
}

async function findFile(dirs: string[], fileName: string, size: number): Promise<string | null> {
  if (fileName.includes('/') || fileName.includes('\\') || fileName.startsWith('.')) return null
  for (const dir of dirs) {
    const path = join(dir, fileName)
    const info = await stat(path).catch(() => null)
    if (info?.isFile() && (!size || info.size === size)) return path
  }
  return null
}

function sha256(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256')
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
      .on('error', reject)
  })
}
