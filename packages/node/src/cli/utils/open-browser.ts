/**
 * @module open-browser
 * Best effort: open a URL in the desktop browser. Headless machines just keep the printed URL.
 * The URL is the server's (the approve page), so only http(s) is opened: a `file:`, `smb:` or
 * custom-scheme URL would have the desktop open or run whatever the server named.
 */
import { spawn } from 'node:child_process'

/** The opener and its arguments for `url` on `platform`; null for anything but an http(s) URL. */
export function browserCommand(
  url: string,
  platform: NodeJS.Platform = process.platform,
): [string, string[]] | null {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return null
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null
  // The parsed form: control characters and spaces percent-encoded, nothing an opener reads as
  // an option.
  const href = parsed.href
  if (platform === 'darwin') return ['open', [href]]
  // Not `cmd /c start`: cmd parses the URL as a command line, and `&` in a query string would
  // run what follows it.
  if (platform === 'win32') return ['rundll32', ['url.dll,FileProtocolHandler', href]]
  return ['xdg-open', [href]]
}

/** Starts the platform's opener detached; every failure is ignored (the URL is printed anyway). */
export function openBrowser(url: string): void {
  const command = browserCommand(url)
  if (!command) return
  try {
    const child = spawn(command[0], command[1], { detached: true, stdio: 'ignore' })
    // No opener installed (ENOENT) is the common headless case, not an error worth reporting.
    child.on('error', () => {})
    child.unref()
  } catch {
    // spawn can throw synchronously on odd platforms; the printed URL still works.
  }
}
