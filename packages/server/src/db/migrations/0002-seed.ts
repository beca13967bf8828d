/**
 * @module Seed data every installation starts with: the single config record with the default
 * sampling values, and the default model catalogue (real small GGUF models with their public
 * source URLs, sizes and hashes).
 */
import type { Migration } from 'kysely'
import type { Db } from '../database.ts'

const now = '2026-11-22 00:00:00.000Z'

export const defaultCatalogue = [
  {
    id: 'stories260kmdl0',
    name: 'stories260K',
    display_name: 'Stories 260K',
    description: "A 260K-parameter Llama trained on TinyStories: writes short children's stories.",
    file_name: 'stories260K.gguf',
    file_size_bytes: 1185376,
    source_url: 'https://huggingface.co/ggml-org/models/resolve/main/tinyllamas/stories260K.gguf',
    sha256: '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d',
    credit_multiplier: 1,
    sort_order: 1,
  },
  {
    id: 'llama2tinyrnd00',
    name: 'llama-2-tiny-random',
    display_name: 'Llama 2 Tiny (random)',
    description:
      'Llama-2 architecture with random weights and the real 32k vocabulary; for testing.',
    file_name: 'llama-2-tiny-random.gguf',
    file_size_bytes: 1750560,
    source_url:
      'https://huggingface.co/aladar/llama-2-tiny-random-GGUF/resolve/main/llama-2-tiny-random.gguf',
    sha256: '81f226c62d28ed4a1a9b9fa080fcd9f0cc40e0f9d5680036583ff98fbcd035cb',
    credit_multiplier: 2,
    sort_order: 2,
  },
]

export const seed: Migration = {
  async up(db: Db) {
    await db
      .insertInto('config')
      .values({
        id: 'meshworkconfig1',
        default_temperature: 0.7,
        default_top_p: 0.9,
        default_top_k: 40,
        default_repeat_penalty: 1.1,
        default_frequency_penalty: 0,
        default_presence_penalty: 0,
        created: now,
        updated: now,
      })
      .execute()
    for (const model of defaultCatalogue) {
      await db
        .insertInto('models')
        .values({ ...model, is_active: 1, created: now, updated: now })
        .execute()
    }
  },
}
