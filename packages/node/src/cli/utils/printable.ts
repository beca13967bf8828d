/**
 * @module printable
 * Text from a server made safe for the owner's terminal. A terminal obeys what follows ESC (and
 * other control characters) in what it prints: a coordinator's model name, job id or error could
 * rewrite the lines above, retitle the window or set the clipboard (OSC 52), and bidi overrides
 * could show a line reversed. Each such character is printed as a visible `\u….` escape instead.
 */

// eslint-disable-next-line no-control-regex -- control characters are what this removes.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g

/** `text` with every control or bidi-override character written as `\u` and four hex digits. */
export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
