/**
 * @module Reads a request body as the SDK sends it: JSON, or multipart/urlencoded form data whose
 * `@jsonPayload` parts carry JSON objects and whose text values get PocketBase's value inference.
 * Its shape is checked before it is parsed (input-limits.ts): JSON depth and item count, the
 * number of form fields.
 */
import type { Context } from 'hono'
import { badRequest } from '../tools/api-error.ts'
import { jsonShapeError } from '../tools/json-shape.ts'
import { containsNul } from '../tools/nul.ts'
import { MAX_FORM_FIELDS } from './input-limits.ts'

export type Body = Record<string, unknown>

export async function readBody(c: Context): Promise<Body> {
  const body = await parseBody(c)
  if (containsNul(body)) throw badRequest('Text may not contain NUL characters.')
  return body
}

async function parseBody(c: Context): Promise<Body> {
  const type = c.req.header('content-type') ?? ''
  const multipart = type.includes('multipart/form-data')
  if (multipart || type.includes('x-www-form-urlencoded')) return parseForm(c, type, multipart)
  const text = await c.req.text()
  if (!text.trim()) return {}
  const parsed = parseJson(text)
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw badRequest()
  return parsed as Body
}

function parseJson(text: string): unknown {
  const shapeError = jsonShapeError(text)
  if (shapeError) throw badRequest(shapeError)
  try {
    return JSON.parse(text)
  } catch {
    throw badRequest()
  }
}

async function parseForm(c: Context, type: string, multipart: boolean): Promise<Body> {
  const bytes = new Uint8Array(await c.req.arrayBuffer())
  const entries: Array<[string, unknown]> = []
  if (multipart) {
    const boundary = /boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(type)
    if (!boundary) throw badRequest()
    if (countOccurrences(bytes, `--${boundary[1] ?? boundary[2]}`) > MAX_FORM_FIELDS + 1)
      throw tooManyFields()
    let form: FormData
    try {
      form = await new Response(bytes, { headers: { 'content-type': type } }).formData()
    } catch {
      // A form body that does not parse (bad boundary, truncated part) is the client's error.
      throw badRequest()
    }
    for (const entry of form) entries.push(entry)
  } else {
    const text = new TextDecoder().decode(bytes)
    if (countOccurrences(bytes, '&') >= MAX_FORM_FIELDS) throw tooManyFields()
    for (const entry of new URLSearchParams(text)) entries.push(entry)
  }
  const body: Body = {}
  for (const [key, value] of entries) {
    if (key === '@jsonPayload') {
      if (typeof value === 'string')
        for (const [k, v] of Object.entries(parseJson(value) as object)) put(body, k, v)
      continue
    }
    // Repeated keys collect into an array, as Hono's parseBody({ all: true }) does.
    const inferred = inferValue(value)
    const seen = Object.hasOwn(body, key) ? body[key] : undefined
    if (seen === undefined) put(body, key, key.endsWith('[]') ? [inferred] : inferred)
    else if (Array.isArray(seen)) seen.push(inferred)
    else put(body, key, [seen, inferred])
  }
  return body
}

/**
 * Sets an own property, whatever the key: assigning `__proto__` (as Object.assign does with a
 * payload's own `__proto__` key) would instead make the value the body's prototype, and the
 * checks that read own keys only (NUL) would miss what the body then reads through it.
 */
function put(body: Body, key: string, value: unknown) {
  Object.defineProperty(body, key, { value, enumerable: true, writable: true, configurable: true })
}

function tooManyFields() {
  return badRequest(`The submitted form has too many fields (at most ${MAX_FORM_FIELDS}).`)
}

/** How often `needle` (ASCII) occurs in `bytes`: a linear scan, no decoding. */
function countOccurrences(bytes: Uint8Array, needle: string): number {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let count = 0
  for (let i = buf.indexOf(needle); i !== -1; i = buf.indexOf(needle, i + needle.length)) count++
  return count
}

function inferValue(value: unknown): unknown {
  if (typeof value !== 'string') return value
  if (value === 'true') return true
  if (value === 'false') return false
  if (value !== '' && /^-?\d+(\.\d+)?$/.test(value) && String(Number(value)) === value)
    return Number(value)
  return value
}
