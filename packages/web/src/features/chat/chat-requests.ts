/**
 * @module The chat screen's list requests as plain query objects: the app sends them through the
 * SDK, and boot.ts sends the first ones with fetch before the app's code has even run. One
 * definition, so both ask the server the same thing. No imports (boot.ts stays tiny).
 */

export const HISTORY_PAGE = 50

export interface ListQuery {
  page: number
  perPage: number
  skipTotal: boolean
  sort: string
  filter?: string
}

/** A string in a filter, quoted as the SDK's pb.filter() quotes it. */
const quote = (value: string) => JSON.stringify(value)

/** Where the next older page starts: after this (created, id). */
export type HistoryCursor = { created: string; id: string } | null

/** A page of a conversation's history, newest first, without replaced answers. */
export function historyListQuery(
  conversationId: string,
  userId: string,
  cursor: HistoryCursor = null,
): ListQuery {
  let filter = `conversation = ${quote(conversationId)} && user = ${quote(userId)} && replaced_by = ""`
  // Keyset paging by (created, id): new messages arriving do not shift older pages.
  if (cursor) {
    const t = quote(cursor.created)
    filter += ` && (created < ${t} || (created = ${t} && id < ${quote(cursor.id)}))`
  }
  return { page: 1, perPage: HISTORY_PAGE, skipTotal: true, sort: '-created,-id', filter }
}

/** The sidebar: -last_message_at, 50 per page, own user only (spec §7). */
export function conversationsListQuery(userId: string): ListQuery {
  return {
    page: 1,
    perPage: 50,
    skipTotal: true,
    sort: '-last_message_at,-created',
    filter: `user = ${quote(userId)}`,
  }
}

/** Available models sorted sort_order then name, 500 at a time (spec §7). */
export const MODELS_BATCH = 500
export const modelsListQuery: ListQuery = {
  page: 1,
  perPage: MODELS_BATCH,
  skipTotal: true,
  sort: 'sort_order,name',
}

/** The records API address of a list query. */
export function listUrl(collection: string, q: ListQuery): string {
  const params = new URLSearchParams({
    page: String(q.page),
    perPage: String(q.perPage),
    skipTotal: String(q.skipTotal),
    sort: q.sort,
  })
  if (q.filter) params.set('filter', q.filter)
  return `/api/collections/${collection}/records?${params.toString()}`
}
