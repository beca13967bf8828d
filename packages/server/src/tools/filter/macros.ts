/**
 * @module PocketBase's date and time macros (`@now`, `@todayStart`, `@weekday`...), all in UTC.
 * Dates render in the stored format, so they compare as text with date columns.
 */
import { formatDate } from '../dates.ts'
import type { Scalar, ValueKind } from './values.ts'

const day = 24 * 60 * 60 * 1000

/** The macro's value, or undefined when `name` is not a macro. */
export function resolveMacro(
  name: string,
  now: Date,
): { kind: ValueKind; value: Scalar } | undefined {
  const y = now.getUTCFullYear()
  const m = now.getUTCMonth()
  const d = now.getUTCDate()
  const date = (value: number) => ({ kind: 'text' as const, value: formatDate(new Date(value)) })
  const int = (value: number) => ({ kind: 'number' as const, value })
  switch (name) {
    case '@now':
      return date(now.getTime())
    case '@yesterday':
      return date(now.getTime() - day)
    case '@tomorrow':
      return date(now.getTime() + day)
    case '@todayStart':
      return date(Date.UTC(y, m, d))
    case '@todayEnd':
      return date(Date.UTC(y, m, d, 23, 59, 59, 999))
    case '@monthStart':
      return date(Date.UTC(y, m, 1))
    case '@monthEnd':
      return date(Date.UTC(y, m + 1, 0, 23, 59, 59, 999))
    case '@yearStart':
      return date(Date.UTC(y, 0, 1))
    case '@yearEnd':
      return date(Date.UTC(y, 11, 31, 23, 59, 59, 999))
    case '@second':
      return int(now.getUTCSeconds())
    case '@minute':
      return int(now.getUTCMinutes())
    case '@hour':
      return int(now.getUTCHours())
    case '@day':
      return int(d)
    case '@month':
      return int(m + 1)
    case '@weekday':
      return int(now.getUTCDay())
    case '@year':
      return int(y)
    default:
      return undefined
  }
}
