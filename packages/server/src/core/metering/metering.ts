/**
 * @module The coordinator's metering rules per model: its own tokenizer when it can load one, and
 * the calibrated byte bound otherwise (both in answer-meter.ts). Reference nodes' answers feed
 * the calibration.
 */
import type { Db } from '../../db/database.ts'
import type { MeterRule } from './answer-meter.ts'
import { byteRule, recordReferenceAnswer } from './calibration.ts'
import { Tokenizers } from './model-tokenizer.ts'

export class Metering {
  readonly tokenizers: Tokenizers

  constructor(
    private db: Db,
    /** Folders that may hold catalogue model files (the model mirror, the built-in node's). */
    modelDirs: string[],
  ) {
    this.tokenizers = new Tokenizers(db, modelDirs)
  }

  async rule(modelId: string): Promise<MeterRule> {
    const [tokenizer, bytes] = await Promise.all([
      this.tokenizers.get(modelId),
      byteRule(this.db, modelId),
    ])
    return { tokenizer, bytes }
  }

  /**
   * Loads the tokenizers of the active models one after another, so that the first send to a
   * model does not wait for node-llama-cpp, the file's sha256 and its vocabulary (1.7 s for a
   * tiny model on the development machine, far more for a file of gigabytes). Failures are
   * logged and cached as "no tokenizer" (Tokenizers.get), as on first use.
   */
  async warmUp(): Promise<number> {
    const models = await this.db
      .selectFrom('models')
      .select('id')
      .where('is_active', '=', 1)
      .orderBy('id')
      .execute()
    let loaded = 0
    for (const m of models) if (await this.tokenizers.get(String(m.id))) loaded++
    return loaded
  }

  /** A reference node's answer: its text's bytes against its own token count. */
  async calibrate(modelId: string, text: string, tokens: number): Promise<void> {
    await recordReferenceAnswer(this.db, modelId, Buffer.byteLength(text), tokens)
  }

  dispose(): Promise<void> {
    return this.tokenizers.dispose()
  }
}
