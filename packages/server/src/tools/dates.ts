/** PocketBase's date format: "2006-01-02 15:04:05.000Z" (UTC, space separator, milliseconds). */
export function formatDate(date: Date): string {
  return date.toISOString().replace('T', ' ')
}

export function nowDate(): string {
  return formatDate(new Date())
}

/** Lenient parse of a client-sent date (ISO with T or space, offsets, unix seconds); null if invalid. */
export function parseDate(value: unknown): string | null {
  if (value === '' || value === null || value === undefined) return ''
  if (typeof value !== 'number' && typeof value !== 'string') return null
  const date =
    typeof value === 'number'
      ? new Date(value * 1000)
      : new Date(value.includes(' ') && !value.includes('T') ? value.replace(' ', 'T') : value)
  // Past the years the format writes (0000-9999) toISOString adds a sign, or throws (1e20 seconds).
  const year = date.getUTCFullYear()
  return Number.isNaN(year) || year < 0 || year > 9999 ? null : formatDate(date)
}
