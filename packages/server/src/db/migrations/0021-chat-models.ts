/**
 * @module The catalogue gets instruction-tuned chat models that people run on their own machines
 * (Q4_K_M GGUF files on the Hugging Face hub), each prompted with the chat template inside its
 * GGUF by the node. Their size and sha256 are not pinned here (they could not be checked from
 * where this was written): the coordinator reads them from the hub's `X-Linked-Size` /
 * `X-Linked-Etag` headers the first time a node asks for the model, and pins them
 * (src/core/models/model-pins.ts). The random-weights test model moves to the end of the list.
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'

const now = '2026-11-23 00:00:00.000Z'
const hub = 'https://huggingface.co'

// credit_multiplier in thousandths (migration 0003 made credits exact units): 1000 is x1.
export const chatModels = [
  {
    id: 'qwen25instr05b0',
    name: 'qwen2.5-0.5b-instruct',
    display_name: 'Qwen2.5 0.5B Instruct',
    description:
      "Alibaba's smallest Qwen2.5 chat model: quick answers on any machine, about 0.4 GB.",
    file_name: 'qwen2.5-0.5b-instruct-q4_k_m.gguf',
    source_url: `${hub}/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf`,
    credit_multiplier: 1000,
    sort_order: 2,
  },
  {
    id: 'llama32instr1b0',
    name: 'llama-3.2-1b-instruct',
    display_name: 'Llama 3.2 1B Instruct',
    description: "Meta's small Llama 3.2 chat model, about 0.8 GB.",
    file_name: 'Llama-3.2-1B-Instruct-Q4_K_M.gguf',
    source_url: `${hub}/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q4_K_M.gguf`,
    credit_multiplier: 1000,
    sort_order: 3,
  },
  {
    id: 'qwen25instr15b0',
    name: 'qwen2.5-1.5b-instruct',
    display_name: 'Qwen2.5 1.5B Instruct',
    description: 'A capable small Qwen2.5 chat model for laptops, about 1.0 GB.',
    file_name: 'qwen2.5-1.5b-instruct-q4_k_m.gguf',
    source_url: `${hub}/Qwen/Qwen2.5-1.5B-Instruct-GGUF/resolve/main/qwen2.5-1.5b-instruct-q4_k_m.gguf`,
    credit_multiplier: 2000,
    sort_order: 4,
  },
  {
    id: 'llama32instr3b0',
    name: 'llama-3.2-3b-instruct',
    display_name: 'Llama 3.2 3B Instruct',
    description:
      "Meta's Llama 3.2 3B chat model, about 2 GB: better answers, needs 4 GB of memory.",
    file_name: 'Llama-3.2-3B-Instruct-Q4_K_M.gguf',
    source_url: `${hub}/bartowski/Llama-3.2-3B-Instruct-GGUF/resolve/main/Llama-3.2-3B-Instruct-Q4_K_M.gguf`,
    credit_multiplier: 2000,
    sort_order: 5,
  },
  {
    id: 'qwen25instr7b00',
    name: 'qwen2.5-7b-instruct',
    display_name: 'Qwen2.5 7B Instruct',
    description:
      'A strong general chat model, about 4.7 GB: for machines with 8 GB of memory or a GPU.',
    file_name: 'Qwen2.5-7B-Instruct-Q4_K_M.gguf',
    source_url: `${hub}/bartowski/Qwen2.5-7B-Instruct-GGUF/resolve/main/Qwen2.5-7B-Instruct-Q4_K_M.gguf`,
    credit_multiplier: 4000,
    sort_order: 6,
  },
]

export const addChatModels: Migration = {
  async up(db: Db) {
    for (const model of chatModels) {
      // An installation whose admin added one of these already keeps its own row.
      const taken = await db
        .selectFrom('models')
        .select('id')
        .where('name', '=', model.name)
        .executeTakeFirst()
      if (taken) continue
      await db
        .insertInto('models')
        .values({
          ...model,
          file_size_bytes: 0,
          sha256: '',
          is_active: 1,
          created: now,
          updated: now,
        })
        .execute()
    }
    await db
      .updateTable('models')
      .set({
        sort_order: 90,
        description:
          'Llama-2 architecture with random weights and the real 32k vocabulary: writes gibberish. For testing nodes.',
        updated: now,
      })
      .where('name', '=', 'llama-2-tiny-random')
      .where('sort_order', '=', 2)
      .execute()
  },
}
