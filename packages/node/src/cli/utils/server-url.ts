/**
 * @module server-url
 * Checks a `--server` URL before it is used. A user name or password in it would be printed:
 * fetch refuses such URLs with an error that quotes them whole, and that error reaches the
 * terminal, the log and the coordinator (a download's `error_message`).
 */

/** Why `server` cannot be used, in words that do not repeat it; null when it can. */
export function serverUrlProblem(server: string): string | null {
  let url: URL
  try {
    url = new URL(server)
  } catch {
    return null // not a URL at all: the command's own error says so
  }
  if (url.username || url.password) {
    return '--server must not contain a user name or password (the node signs in with its own credential)'
  }
  return null
}
