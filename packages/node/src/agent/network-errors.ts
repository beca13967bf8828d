/**
 * @module network-errors
 * Names the cause of a failed connection in words a node owner can act on ("connection refused",
 * "host not found"), from the error codes Node's fetch and sockets carry (often on `cause`).
 */

const causes: Array<[RegExp, string]> = [
  [/^ECONNREFUSED$/, 'connection refused'],
  [/^(ENOTFOUND|EAI_AGAIN|EAI_NONAME)$/, 'host not found'],
  [/^(ECONNRESET|EPIPE|UND_ERR_SOCKET)$/, 'connection reset'],
  [
    /^(ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT|UND_ERR_BODY_TIMEOUT)$/,
    'timed out',
  ],
  [/^(EHOSTUNREACH|ENETUNREACH|ENETDOWN)$/, 'network unreachable'],
  [/CERT|SSL|TLS|SELF_SIGNED/, 'TLS certificate problem'],
  [/^HPE_/, 'not a Meshwork server (it does not speak HTTP)'],
]

/** The error code of `err` or of the first cause that has one. */
export function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string') return code
    e = (e as { cause?: unknown }).cause
  }
  return undefined
}

/** A short cause: 'connection refused', 'host not found', ... or the error's own message. */
export function describeNetworkError(err: unknown): string {
  const code = errorCode(err)
  if (code) for (const [pattern, words] of causes) if (pattern.test(code)) return words
  const cause = (err as { cause?: unknown } | null)?.cause
  const message = cause instanceof Error ? cause.message : err instanceof Error ? err.message : ''
  return message || String(err)
}
