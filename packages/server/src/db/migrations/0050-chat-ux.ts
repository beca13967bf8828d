/**
 * @module Chat as people know it (issue 9): each conversation keeps its own temperature, a new
 * conversation sorts by its creation until it has messages, and a regenerated answer points at
 * the request that replaced it (so history and prompts leave it out).
 */
import { sql, type Migration } from 'kysely'
import type { Db } from '../database.ts'

export const chatUx: Migration = {
  async up(db: Db) {
    await db.schema
      .alterTable('conversations')
      .addColumn('temperature', 'double precision', (c) => c.notNull().defaultTo(0.7))
      .execute()
    // Conversations so far used the page's temperature, which started at the config default.
    await sql`UPDATE conversations SET temperature = COALESCE((SELECT default_temperature FROM config LIMIT 1), 0.7)`.execute(
      db,
    )
    // Empty last_message_at sorted below every dated conversation (and past page 1 of the list).
    await sql`UPDATE conversations SET last_message_at = created WHERE last_message_at = ''`.execute(
      db,
    )
    await db.schema
      .alterTable('requests')
      .addColumn('replaced_by', 'text', (c) => c.notNull().defaultTo(''))
      .execute()
  },
}
