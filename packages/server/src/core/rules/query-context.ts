/**
 * @module What a rule or filter is evaluated against: the dialect, the caller and the request.
 */
import type { SqlDialect } from '../../tools/filter/sql-values.ts'

export type Dialect = SqlDialect

export interface QueryContext {
  dialect: Dialect
  /** The signed-in users row (id, email, name, verified, ...) or null for guests. */
  auth: Record<string, unknown> | null
  /** The submitted body, for `@request.body.*` (create/update rules). */
  body?: Record<string, unknown>
  /** `@request.method`. */
  method?: string
  /** The clock for `@now` and friends; defaults to the time of the call. */
  now?: Date
}
