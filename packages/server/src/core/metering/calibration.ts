/**
 * @module Bytes per token for metering without a tokenizer, calibrated per model from reference
 * nodes' answers (the built-in node, trusted nodes): their texts' UTF-8 length against their own
 * token counts. Until enough has been seen the bound is the safest one: one token per byte.
 */
import { sql } from 'kysely'
import type { Db } from '../../db/database.ts'
import { nowDate } from '../../tools/dates.ts'
import { newRecordId } from '../../tools/ids.ts'

export interface ByteRule {
  /** Bills at most ceil(bytes / this) tokens: below any honest answer's bytes per token. */
  minBytesPerToken: number
  /** Stored answers are cut at budget x this: above any honest answer's bytes per token. */
  maxBytesPerToken: number
}

/** Without calibration: never bill more tokens than bytes; keep up to 32 bytes per token. */
export const UNCALIBRATED: ByteRule = { minBytesPerToken: 1, maxBytesPerToken: 32 }

/** Reference tokens seen before the calibration is used. */
export const CALIBRATION_MIN_TOKENS = 2000
/** The billing bound sits this far below the reference mean (answers vary around it). */
const BILLING_SHARE = 0.75

export async function byteRule(db: Db, modelId: string): Promise<ByteRule> {
  const row = await db
    .selectFrom('_token_calibration')
    .selectAll()
    .where('model', '=', modelId)
    .executeTakeFirst()
  const tokens = Number(row?.tokens ?? 0)
  if (!row || tokens < CALIBRATION_MIN_TOKENS) return UNCALIBRATED
  const mean = Number(row.bytes) / tokens
  return {
    minBytesPerToken: Math.max(1, mean * BILLING_SHARE),
    maxBytesPerToken: Math.max(8, 2 * Number(row.max_bytes_per_token)),
  }
}

/** Adds one reference answer (its text's bytes and the reference's own token count). */
export async function recordReferenceAnswer(
  db: Db,
  modelId: string,
  bytes: number,
  tokens: number,
): Promise<void> {
  if (tokens <= 0 || bytes <= 0) return
  const ratio = bytes / tokens
  const now = nowDate()
  const existing = await db
    .selectFrom('_token_calibration')
    .select('id')
    .where('model', '=', modelId)
    .executeTakeFirst()
  if (!existing) {
    // Two first answers at once: the unique index lets one insert; the other adds nothing.
    await db
      .insertInto('_token_calibration')
      .values({
        id: newRecordId(),
        model: modelId,
        answers: 1,
        bytes,
        tokens,
        max_bytes_per_token: ratio,
        created: now,
        updated: now,
      })
      .onConflict((oc) => oc.column('model').doNothing())
      .execute()
    return
  }
  await db
    .updateTable('_token_calibration')
    .set({
      answers: sql`answers + 1`,
      bytes: sql`bytes + ${bytes}`,
      tokens: sql`tokens + ${tokens}`,
      max_bytes_per_token: sql`CASE WHEN max_bytes_per_token < ${ratio} THEN ${ratio} ELSE max_bytes_per_token END`,
      updated: now,
    })
    .where('id', '=', existing.id)
    .execute()
}
