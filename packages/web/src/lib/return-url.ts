/**
 * Reads the login screen's return parameter (spec §2): it is decoded, and a full URL is reduced
 * to its path, query and hash so that a return target can never leave this origin. A failed parse
 * is logged and ignored (null).
 */
export function parseReturnParam(raw: string | null | undefined): string | null {
  if (!raw) return null
  try {
    let decoded = decodeURIComponent(raw)
    // A caller may have encoded twice (return inside another return); one more pass is harmless.
    if (/^https?%3A/i.test(decoded) || decoded.startsWith('%2F'))
      decoded = decodeURIComponent(decoded)
    let path = decoded
    if (/^[a-z][a-z0-9+.-]*:/i.test(decoded)) {
      const url = new URL(decoded)
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new Error(`bad scheme ${url.protocol}`)
      path = `${url.pathname}${url.search}${url.hash}`
    }
    if (!path.startsWith('/')) throw new Error('not a path')
    // '//host' would be protocol-relative; keep it a path on this origin.
    path = path.replace(/^\/{2,}/, '/')
    // Browsers read a backslash as '/' and drop tabs and newlines: '/\host' and '/<tab>/host' are
    // '//host' as well. The router refuses such a target with its error page: keep none.
    const probe = 'http://origin.invalid'
    if (new URL(path, probe).origin !== probe) throw new Error('names another host')
    return path
  } catch (err) {
    console.warn('Ignoring invalid return parameter', err)
    return null
  }
}

/** Builds /login?return=... for the current full address. */
export function loginUrlWithReturn(fullAddress: string): string {
  return `/login?return=${encodeURIComponent(fullAddress)}`
}
