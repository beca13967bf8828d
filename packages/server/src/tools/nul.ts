/**
 * @module U+0000 in text. PostgreSQL cannot store it in a text column (the whole statement fails),
 * and nothing Meshwork keeps needs it, so it never reaches the database: requests carrying it are
 * refused at the HTTP edge, and nodes' frames (model output included) lose it when parsed.
 */

/** Whether a string anywhere in a parsed JSON value (keys included) holds U+0000. */
export function containsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\0')
  if (Array.isArray(value)) return value.some(containsNul)
  if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value))
      if (key.includes('\0') || containsNul(v)) return true
  }
  return false
}

/** A `JSON.parse` reviver that drops U+0000 from every string value. */
function dropNul(_key: string, value: unknown): unknown {
  return typeof value === 'string' && value.includes('\0') ? value.replaceAll('\0', '') : value
}

/**
 * `JSON.parse` with U+0000 dropped from every string value. A reviver makes parsing several times
 * slower (a node sends a frame per chunk of text), and only text holding the escape `\u0000` can
 * need it: JSON text cannot carry a raw U+0000.
 */
export function parseJsonDroppingNul(text: string): unknown {
  return text.includes('\\u0000') ? JSON.parse(text, dropNul) : JSON.parse(text)
}

/** Whether a request URL carries U+0000, raw or percent-encoded. */
export function urlHasNul(url: string): boolean {
  return url.includes('\0') || /%00/i.test(url)
}
