/**
 * @module Checks the shape of JSON text before `JSON.parse` sees it, in one linear pass: nesting
 * depth (a body nested 50,000 deep overflowed the stack and answered 500) and the number of items
 * (an object of 90,000 distinct keys costs `JSON.parse` a few hundred milliseconds of blocked
 * event loop; 2,000 cost a few).
 */

/** Most characters of JSON one response may hold (a few MB; serialising it takes ~15 ms). */
export const MAX_RESPONSE_CHARS = 8_000_000

/**
 * Whether `value` would serialise to more than `max` characters (roughly: strings, plus a few
 * characters per value). Stops as soon as it is over, so its cost is bounded by the count of
 * values it visits. Shared objects count each time they appear, as they do in the JSON (an
 * expanded record shared by many items is written out for each).
 */
export function jsonLongerThan(value: unknown, max = MAX_RESPONSE_CHARS): boolean {
  let size = 0
  const stack: unknown[] = [value]
  while (stack.length) {
    const v = stack.pop()
    size += typeof v === 'string' ? v.length + 2 : 8
    if (size > max) return true
    if (v && typeof v === 'object') {
      if (Array.isArray(v)) for (const item of v) stack.push(item)
      else
        for (const key in v) {
          size += key.length + 4
          stack.push((v as Record<string, unknown>)[key])
        }
    }
  }
  return false
}

/** Deepest nesting of objects and arrays any request body may have (issue 8: 400 levels; a
 * deeper body is a 400 answer, never a 500). */
export const MAX_JSON_DEPTH = 400
/** Most items (object members plus array elements, all levels together) of one body. */
export const MAX_JSON_ITEMS = 2000

const QUOTE = 34
const BACKSLASH = 92
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125
const OPEN_ARRAY = 91
const CLOSE_ARRAY = 93
const COMMA = 44

/** Why `text` is refused (a sentence for the API's 400), or null when its shape is within limits. */
export function jsonShapeError(
  text: string,
  maxDepth = MAX_JSON_DEPTH,
  maxItems = MAX_JSON_ITEMS,
): string | null {
  let depth = 0
  let items = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
      continue
    }
    if (c === QUOTE) inString = true
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth)
        return `The submitted JSON is nested too deeply (at most ${maxDepth} levels).`
      // An opening bracket starts a container whose first item (if any) has no comma before it.
      if (++items > maxItems) return tooManyItems(maxItems)
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--
    else if (c === COMMA && ++items > maxItems) return tooManyItems(maxItems)
  }
  return null
}

function tooManyItems(max: number): string {
  return `The submitted JSON has too many items (at most ${max}).`
}
