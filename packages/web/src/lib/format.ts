/** @module Display formatting the spec pins (§2, §5, §9). */

const DAY_MS = 1000 * 60 * 60 * 24

/**
 * Sidebar date: 'Today' (within 1 day), 'Yesterday' (2), 'N days ago' up to 7, else a local date.
 * Days are counted as ceil(|now - date| / 24 h), as in the product spec.
 */
export function formatRelativeDate(value: string | Date, now: Date = new Date()): string {
  const date = typeof value === 'string' ? parseRecordDate(value) : value
  if (Number.isNaN(date.getTime())) return ''
  const diffDays = Math.ceil(Math.abs(now.getTime() - date.getTime()) / DAY_MS)
  if (diffDays <= 1) return 'Today'
  if (diffDays === 2) return 'Yesterday'
  if (diffDays <= 7) return `${diffDays} days ago`
  return localDate.format(date)
}

// The format toLocaleDateString() uses, built once (the sidebar formats up to 50 dates a render).
const localDate = new Intl.DateTimeFormat()

/** Parses PocketBase's 'YYYY-MM-DD HH:MM:SS.sssZ' (space separator) as well as ISO strings. */
export function parseRecordDate(value: string): Date {
  return new Date(value.includes('T') ? value : value.replace(' ', 'T'))
}

/** Each word capitalised, the rest lowercased (header title rename, spec §5). */
export function toTitleCase(text: string): string {
  return text.replace(/\S+/g, (word) => word.charAt(0).toUpperCase() + word.slice(1).toLowerCase())
}

/** Input token estimate: one token per 4 characters, rounded down (the coordinator's rule). */
export { estimateTokens } from '@meshwork/protocol/token-estimate'

/**
 * Model size: bytes / 1024³ with one decimal, e.g. '4.1 GB' (spec §9). Below 0.1 GB that would
 * read '0.0 GB' for a real file, so small files show in MB (bytes / 1024², one decimal) instead.
 */
export function formatGigabytes(bytes: number): string {
  if (bytes > 0 && bytes < 0.05 * 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MB`
  return `${(bytes / 1024 ** 3).toFixed(1)} GB`
}

/** Tokens per second with one decimal, e.g. '12.5 tok/s'. */
export function formatTokensPerSecond(value: number): string {
  return `${(Number.isFinite(value) ? value : 0).toFixed(1)} tok/s`
}

/** Reputation with one decimal. */
export function formatReputation(value: number | null | undefined): string {
  return (value ?? 0).toFixed(1)
}

// One formatter per precision: `toLocaleString` with options builds a new Intl.NumberFormat on
// every call, which is most of its cost.
const numberFormats = new Map<number, Intl.NumberFormat>()

/** Locale number formatting used for counts and balances. */
export function formatNumber(value: number | null | undefined, maxFractionDigits = 0): string {
  let format = numberFormats.get(maxFractionDigits)
  if (!format) {
    format = new Intl.NumberFormat(undefined, { maximumFractionDigits: maxFractionDigits })
    numberFormats.set(maxFractionDigits, format)
  }
  return format.format(value ?? 0)
}
