/**
 * @module The network's default sampling settings (the `config` row), read at most once per
 * `ttlMs` per process. Every send needs them, and no API writes them (the collection's write rules
 * are null): an operator who edits the row in the database sees it used within `ttlMs`
 * (docs/scaling.md, "What each send reads").
 */
import type { Db } from '../../db/database.ts'

export const CONFIG_TTL_MS = 5_000

export type ConfigRow = Record<string, unknown> | undefined

export function cachedConfig(db: () => Db, ttlMs = CONFIG_TTL_MS, now = Date.now) {
  let held: { row: ConfigRow; until: number } | null = null
  // Sends that arrive while the row is being read share the one read.
  let reading: Promise<ConfigRow> | null = null
  return async (): Promise<ConfigRow> => {
    if (held && now() < held.until) return held.row
    reading ??= db()
      .selectFrom('config')
      .selectAll()
      .limit(1)
      .executeTakeFirst()
      .then((row: ConfigRow) => {
        held = { row, until: now() + ttlMs }
        return row
      })
      .finally(() => (reading = null))
    return reading
  }
}
