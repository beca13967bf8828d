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

  /** A reference node's answer: its text's bytes against its own token count. */
  async calibrate(modelId: string, text: string, tokens: number): Promise<void> {
    await recordReferenceAnswer(this.db, modelId, Buffer.byteLength(text), tokens)
  }

  dispose(): Promise<void> {
    return this.tokenizers.dispose()
  }
}
