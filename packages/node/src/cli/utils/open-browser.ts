/**
 * @module open-browser
 * Best effort: open a URL in the desktop browser. Headless machines just keep the printed URL.
 */
import { spawn } from 'node:child_process'

/** Starts the platform's opener detached; every failure is ignored (the URL is printed anyway). */
export function openBrowser(url: string): void {
  const [cmd, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]]
  try {
    const child = spawn(cmd, args, { detached: true, stdio: 'ignore' })
    // No opener installed (ENOENT) is the common headless case, not an error worth reporting.
    child.on('error', () => {})
    child.unref()
  } catch {
    // spawn can throw synchronously on odd platforms; the printed URL still works.
  }
}
