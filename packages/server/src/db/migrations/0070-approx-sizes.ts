/**
 * @module The catalogue's chat models (migration 0021) have their size pinned only once a node asks
 * for one and the hub answers (core/models/model-pins.ts); until then a node owner could not tell
 * whether a 7B model fits an 8 GB machine. Each gets the approximate size its model card publishes
 * (Q4_K_M files), shown as "about …" and used for the Edit Node dialog's memory mark until the exact
 * size is pinned. Their descriptions lose the size they repeated (rounded otherwise than the figure
 * now shown beside them), unless an admin has rewritten them.
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'
import { chatModels } from './0021-chat-models.ts'

const GB = 1e9

/** Approximate Q4_K_M file sizes, by catalogue name. */
export const approximateSizes: Record<string, number> = {
  'qwen2.5-0.5b-instruct': 0.49 * GB,
  'llama-3.2-1b-instruct': 0.81 * GB,
  'qwen2.5-1.5b-instruct': 1.12 * GB,
  'llama-3.2-3b-instruct': 2.02 * GB,
  'qwen2.5-7b-instruct': 4.68 * GB,
}

/** The 0021 descriptions without their sizes, by catalogue name. */
const descriptions: Record<string, string> = {
  'qwen2.5-0.5b-instruct': "Alibaba's smallest Qwen2.5 chat model: quick answers on any machine.",
  'llama-3.2-1b-instruct': "Meta's small Llama 3.2 chat model.",
  'qwen2.5-1.5b-instruct': 'A capable small Qwen2.5 chat model for laptops.',
  'llama-3.2-3b-instruct': "Meta's Llama 3.2 3B chat model: better answers, needs 4 GB of memory.",
  'qwen2.5-7b-instruct': 'A strong general chat model: for machines with 8 GB of memory or a GPU.',
}

export const approxSizes: Migration = {
  async up(db: Db) {
    await db.schema
      .alterTable('models')
      .addColumn('approx_size_bytes', 'double precision', (c) => c.notNull().defaultTo(0))
      .execute()
    for (const [name, bytes] of Object.entries(approximateSizes)) {
      await db
        .updateTable('models')
        .set({ approx_size_bytes: bytes })
        .where('name', '=', name)
        .execute()
    }
    for (const model of chatModels) {
      const description = descriptions[model.name]
      if (!description) continue
      await db
        .updateTable('models')
        .set({ description })
        .where('name', '=', model.name)
        .where('description', '=', model.description)
        .execute()
    }
  },
}
