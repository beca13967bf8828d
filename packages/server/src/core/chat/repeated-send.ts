/**
 * @module A send whose answer was lost (a 503 after its transaction committed, a connection cut
 * by a dying coordinator or a proxy) and that its client sends again. A client may give each
 * message an idempotency key (`idempotency_key`, its own, per user); the same message sent again
 * under it, to the same conversation, answers the request it stored instead of running and
 * charging the message twice. Another message under a key in use is refused. The request's id is
 * always the server's: a client naming ids could name one that was deleted, whose ledger rows
 * would then count as the new request's.
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

/** The request an earlier identical send stored under the user's `input.idempotency_key`. */
export async function earlierSend(
  db: Db,
  user: string,
  input: ChatSendBody,
): Promise<RepeatedSend | null> {
  if (!input.idempotency_key) return null
  const row = await db
    .selectFrom('requests')
    .select(['id', 'conversation', 'prompt'])
    .where('user', '=', user)
    .where('idempotency_key', '=', input.idempotency_key)
    .executeTakeFirst()
  if (!row) return null
  const same =
    String(row.conversation) === input.conversation_id && String(row.prompt) === input.prompt
  if (!same) throw keyInUse()
  return { request_id: String(row.id), status: 'queued', position: 0, repeated: true }
}

export const keyInUse = () =>
  validationError('Failed to send the message.', {
    idempotency_key: { code: 'validation_not_unique', message: 'Value must be unique.' },
  })
