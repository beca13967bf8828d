/**
 * @module The e-mail shape check, in one linear pass. The regular expression it replaces
 * (`^[^\s@]+@[^\s@]+\.[^\s@]+$`) backtracks quadratically on inputs like `a@a.a.a…@`, so one
 * anonymous login or sign-up could hold the event loop for seconds.
 */

/** Longest e-mail address the API accepts (RFC 5321 allows 254; PocketBase caps fields at 255). */
export const MAX_EMAIL_LENGTH = 255

/**
 * Same language as the old pattern: one `@`, no whitespace, a non-empty local part, and a domain
 * with a dot that has at least one character on each side. Longer than MAX_EMAIL_LENGTH: false.
 */
export function isEmail(text: string): boolean {
  if (text.length > MAX_EMAIL_LENGTH) return false
  let at = -1
  let innerDot = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (ch === '@') {
      if (at !== -1) return false
      at = i
    } else if (isWhitespace(ch)) return false
    else if (ch === '.' && at !== -1 && i > at + 1 && i < text.length - 1) innerDot = true
  }
  return at > 0 && innerDot
}

// Exactly what `\s` matches in JavaScript regular expressions.
function isWhitespace(ch: string): boolean {
  return /\s/.test(ch)
}
