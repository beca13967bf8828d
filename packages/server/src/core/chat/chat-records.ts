/**
 * @module The caller's own chat rows, as send, retry, regenerate and quote read them: anyone
 * else's conversation is the spec's 403, anyone else's request a 404 (its id says nothing).
 */
import { CHARS_PER_TOKEN } from '@meshwork/protocol'
import { sql } from 'kysely'
import type { Db } from '../../db/database.ts'
import { ApiError } from '../../tools/api-error.ts'
import type { Turn } from './build-prompt.ts'

/** An error whose message is sent exactly as written (the spec's strings have no full stop). */
export function exactError(status: number, message: string): ApiError {
  const err = new ApiError(status, message)
  err.message = message
  return err
}

export async function ownConversation(db: Db, user: string, id: string) {
  const conversation = await db
    .selectFrom('conversations')
    .select(['id', 'user', 'temperature'])
    .where('id', '=', id)
    .executeTakeFirst()
  if (!conversation || conversation.user !== user)
    throw exactError(403, 'Conversation does not belong to current user')
  return conversation
}

/** The caller's request with this id. */
export async function ownRequest(db: Db, user: string, requestId: string) {
  const request = await db
    .selectFrom('requests')
    .selectAll()
    .where('id', '=', requestId)
    .executeTakeFirst()
  if (!request || request.user !== user)
    throw new ApiError(404, "The requested resource wasn't found.")
  return request
}

/** Turns whose lengths are read at a time, newest first. */
const HISTORY_PAGE = 100

/**
 * Turns a prompt carries, oldest first: completed answers, and stopped ones with their text (what
 * the user saw and paid for); before `until` when given, never replaced. Only the newest turns that
 * can fit a context of `contextLength` tokens (about 4 characters each; buildPrompt keeps those
 * that do): a conversation may hold thousands of long messages (its owner's own node answers for
 * free), and every message, quote, regenerate and retry reads its history. Their lengths are read
 * first, newest first a page at a time (on the conversation's index), then the text of those that
 * fit.
 */
export async function conversationHistory(
  db: Db,
  conversation: string,
  until: string | undefined,
  contextLength: number,
): Promise<Turn[]> {
  const maxChars = (contextLength + 1) * CHARS_PER_TOKEN
  const turns = () => {
    let query = db
      .selectFrom('requests')
      .where('conversation', '=', conversation)
      .where((eb) =>
        eb.or([
          eb('status', '=', 'completed'),
          eb.and([eb('status', '=', 'cancelled'), eb('response', '!=', '')]),
        ]),
      )
      .where('replaced_by', '=', '')
    if (until) query = query.where('created', '<', until)
    return query
  }
  // Newest first, a page at a time, until the context is full or the history ends.
  let oldest: { created: string; id: string } | undefined
  let chars = 0
  for (let full = false; !full;) {
    let page = turns().select([
      'id',
      'created',
      sql<number>`length(prompt) + length(response)`.as('chars'),
    ])
    const before = oldest
    if (before)
      page = page.where((eb) =>
        eb.or([
          eb('created', '<', before.created),
          eb.and([eb('created', '=', before.created), eb('id', '<', before.id)]),
        ]),
      )
    const rows = await page
      .orderBy('created', 'desc')
      .orderBy('id', 'desc')
      .limit(HISTORY_PAGE)
      .execute()
    for (const row of rows) {
      chars += Number(row.chars)
      if (chars > maxChars) break
      oldest = { created: String(row.created), id: String(row.id) }
    }
    full = chars > maxChars || rows.length < HISTORY_PAGE
  }
  if (!oldest) return []
  const from = oldest
  return (await turns()
    .select(['prompt', 'response'])
    .where((eb) =>
      eb.or([
        eb('created', '>', from.created),
        eb.and([eb('created', '=', from.created), eb('id', '>=', from.id)]),
      ]),
    )
    .orderBy('created')
    .orderBy('id')
    .execute()) as Turn[]
}
