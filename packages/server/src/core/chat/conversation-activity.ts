/**
 * @module What a conversation's row learns from its messages: the sidebar order (last_message_at,
 * from creation on) and an automatic title from the first message, written in the send's
 * transaction so a crash leaves either both the request and the title or neither.
 */
import type { UnitOfWork } from '../records/unit-of-work.ts'
import type { RecordHooks } from '../records/record-hooks.ts'

/** The spec's default title; only a conversation still called this gets an automatic one. */
export const DEFAULT_TITLE = 'New Chat'
export const AUTO_TITLE_MAX = 60

/**
 * A title from the first message: its first non-empty line, markdown markers and runs of white
 * space removed, cut at a word boundary to AUTO_TITLE_MAX characters with an ellipsis.
 */
export function autoTitle(prompt: string): string {
  const line =
    prompt
      .split('\n')
      .map((l) => l.replace(/^\s*(#{1,6}\s|>\s?|[-*+]\s|\d+[.)]\s)+/, '').replace(/[`*_~]/g, ''))
      .map((l) => l.replace(/\s+/g, ' ').trim())
      .find((l) => l.length > 0) ?? ''
  if (!line) return DEFAULT_TITLE
  const chars = Array.from(line)
  if (chars.length <= AUTO_TITLE_MAX) return line
  const cut = chars.slice(0, AUTO_TITLE_MAX - 1).join('')
  const space = cut.lastIndexOf(' ')
  return `${(space >= AUTO_TITLE_MAX / 2 ? cut.slice(0, space) : cut).trimEnd()}…`
}

/** A new conversation sorts by its creation until its first message. */
export function registerConversationHooks(hooks: RecordHooks): void {
  hooks.onAfterCreate('conversations', async (uow, _collection, row) => {
    row.last_message_at = row.created
    await uow.update('conversations', (q) =>
      q.set({ last_message_at: row.created as string }).where('id', '=', row.id as string),
    )
  })
}

/**
 * Inside a send's transaction, before its request row is inserted: moves the conversation to the
 * top of the list and, for its first message, replaces the default title. False when the
 * conversation is gone (deleted since the send read it): the send must not go on, or its request
 * would outlive the conversation's deletion, run and be charged where nobody can see it.
 */
export async function touchConversation(
  uow: UnitOfWork,
  conversationId: string,
  prompt: string,
  now: string,
): Promise<boolean> {
  const conversation = await uow.trx
    .selectFrom('conversations')
    .select(['title'])
    .where('id', '=', conversationId)
    .executeTakeFirst()
  if (!conversation) return false
  const values: Record<string, string> = { last_message_at: now, updated: now }
  if (conversation.title === DEFAULT_TITLE) {
    const earlier = await uow.trx
      .selectFrom('requests')
      .select('id')
      .where('conversation', '=', conversationId)
      .limit(1)
      .executeTakeFirst()
    if (!earlier) values.title = autoTitle(prompt)
  }
  // The update, not the read, decides: on PostgreSQL it waits for a deletion in progress.
  const touched = await uow.update('conversations', (q) =>
    q.set(values).where('id', '=', conversationId),
  )
  return touched.length === 1
}
