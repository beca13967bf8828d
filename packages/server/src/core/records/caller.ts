import type { Row } from './serialize.ts'

/** Who is asking: a signed-in user (the users row), a guest (auth null), or the server itself. */
export interface Caller {
  auth: Row | null
  superuser: boolean
}

export const guest: Caller = { auth: null, superuser: false }
export const server: Caller = { auth: null, superuser: true }
export const asUser = (auth: Row): Caller => ({ auth, superuser: false })
