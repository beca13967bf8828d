/**
 * @module A send whose answer was lost (a 503 after its transaction committed, a connection cut
 * by a dying coordinator or a proxy) and that its client sends again. A client may name the
 * request it is sending (`request_id`, a record id it chose); the same send again, by the same
 * user, to the same conversation, with the same prompt, answers that request instead of running
 * and charging the message twice. Any other use of a taken id is refused, as PocketBase refuses a
 * record id in use.
 */
import type { ChatSendBody } from '@meshwork/protocol'
import type { Db } from '../../db/database.ts'
import { validationError } from '../../tools/api-error.ts'

export interface RepeatedSend {
  request_id: string
  status: 'queued'
  position: number
  /** The request had been stored by an earlier send of this message. */
  repeated: true
}

/** The request an earlier identical send stored under `input.request_id`; null: none yet. */
export async function earlierSend(
  db: Db,
  user: string,
  input: ChatSendBody,
): Promise<RepeatedSend | null> {
  if (!input.request_id) return null
  const row = await db
    .selectFrom('requests')
    .select(['user', 'conversation', 'prompt'])
    .where('id', '=', input.request_id)
    .executeTakeFirst()
  if (!row) return null
  const same =
    String(row.user) === user &&
    String(row.conversation) === input.conversation_id &&
    String(row.prompt) === input.prompt
  if (!same) throw requestIdTaken()
  return { request_id: input.request_id, status: 'queued', position: 0, repeated: true }
}

export const requestIdTaken = () =>
  validationError('Failed to send the message.', {
    request_id: { code: 'validation_not_unique', message: 'Value must be unique.' },
  })
