/**
 * @module Reads a request body as the SDK sends it: JSON, or multipart/urlencoded form data whose
 * `@jsonPayload` parts carry JSON objects and whose text values get PocketBase's value inference.
 */
import type { Context } from 'hono'
import { badRequest } from '../tools/api-error.ts'
import { containsNul } from '../tools/nul.ts'

export type Body = Record<string, unknown>

export async function readBody(c: Context): Promise<Body> {
  const body = await parseBody(c)
  if (containsNul(body)) throw badRequest('Text may not contain NUL characters.')
  return body
}

async function parseBody(c: Context): Promise<Body> {
  const type = c.req.header('content-type') ?? ''
  const text = type.includes('multipart/form-data') || type.includes('x-www-form-urlencoded') ? null : await c.req.text()
  if (text !== null) {
    if (!text.trim()) return {}
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      throw badRequest()
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw badRequest()
    return parsed as Body
  }
  let form: Awaited<ReturnType<typeof c.req.parseBody>>
  try {
    form = await c.req.parseBody({ all: true })
  } catch {
    // A form body that does not parse (bad boundary, truncated part) is the client's error.
    throw badRequest()
  }
  const body: Body = {}
  for (const [key, value] of Object.entries(form)) {
    if (key === '@jsonPayload') {
      for (const payload of Array.isArray(value) ? value : [value]) {
        if (typeof payload !== 'string') continue
        try {
          Object.assign(body, JSON.parse(payload))
        } catch {
          throw badRequest()
        }
      }
      continue
    }
    body[key] = Array.isArray(value) ? value.map(inferValue) : inferValue(value)
  }
  return body
}

function inferValue(value: unknown): unknown {
  if (typeof value !== 'string') return value
  if (value === 'true') return true
  if (value === 'false') return false
  if (value !== '' && /^-?\d+(\.\d+)?$/.test(value) && String(Number(value)) === value) return Number(value)
  return value
}
