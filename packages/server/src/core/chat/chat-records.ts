/**
 * @module The caller's own chat rows, as send, retry, regenerate and quote read them: anyone
 * else's conversation is the spec's 403, anyone else's request a 404 (its id says nothing).
 */
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

/**
 * Turns a prompt carries, oldest first: completed answers, and stopped ones with their text (what
 * the user saw and paid for); before `until` when given, never replaced.
 */
export async function conversationHistory(
  db: Db,
  conversation: string,
  until?: string,
): Promise<Turn[]> {
  let query = db
    .selectFrom('requests')
    .select(['prompt', 'response'])
    .where('conversation', '=', conversation)
    .where((eb) =>
      eb.or([
        eb('status', '=', 'completed'),
        eb.and([eb('status', '=', 'cancelled'), eb('response', '!=', '')]),
      ]),
    )
    .where('replaced_by', '=', '')
  if (until) query = query.where('created', '<', until)
  return (await query.orderBy('created').execute()) as Turn[]
}
