/**
 * @module PocketBase's `fields` parameter: keep only the listed (dotted) keys of a JSON value;
 * `*` keeps a whole level; `name:excerpt(max, ellipsis)` strips HTML and shortens text.
 */

interface Pick {
  children: Map<string, Pick>
  excerpt?: { max: number; ellipsis: boolean }
}

export class FieldsError extends Error {}

const segmentPattern = /^(\*|[A-Za-z_][A-Za-z0-9_]*)$/

/** Parses the parameter; throws FieldsError on malformed paths. */
export function parseFields(text: string): Pick | null {
  const root: Pick = { children: new Map() }
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
  if (parts.length === 0) return null
  for (const part of parts) {
    let path = part
    let excerpt: Pick['excerpt']
    const m = /^(.*):excerpt\((\d+)(?:\s*,\s*(true|false|1|0))?\)$/.exec(part)
    if (m) {
      path = m[1]
      excerpt = { max: Number(m[2]), ellipsis: m[3] === 'true' || m[3] === '1' }
    }
    let node = root
    for (const key of path.split('.')) {
      if (!segmentPattern.test(key))
        throw new FieldsError(`Invalid fields: "${part}" is not a field path.`)
      let next = node.children.get(key)
      if (!next) {
        next = { children: new Map() }
        node.children.set(key, next)
      }
      node = next
    }
    if (excerpt) node.excerpt = excerpt
  }
  return root
}

export function pickFields(value: unknown, pick: Pick): unknown {
  if (Array.isArray(value)) return value.map((v) => pickFields(v, pick))
  if (value === null || typeof value !== 'object') return value
  const src = value as Record<string, unknown>
  const out: Record<string, unknown> = {}
  const star = pick.children.get('*')
  if (star) for (const key of Object.keys(src)) out[key] = applyLeaf(src[key], star)
  for (const [key, child] of pick.children) {
    if (key === '*' || !(key in src)) continue
    out[key] = applyLeaf(src[key], child)
  }
  return out
}

function applyLeaf(value: unknown, pick: Pick): unknown {
  if (pick.excerpt && typeof value === 'string')
    return excerpt(value, pick.excerpt.max, pick.excerpt.ellipsis)
  if (pick.children.size === 0) return value
  return pickFields(value, pick)
}

function excerpt(html: string, max: number, ellipsis: boolean): string {
  const text = stripTags(html).replace(/\s+/g, ' ').trim()
  if (text.length <= max) return text
  return text.slice(0, max).trimEnd() + (ellipsis ? '...' : '')
}

/**
 * Replaces each `<...>` tag with a space, in one pass. The regular expression `/<[^>]*>/g` did the
 * same in quadratic time on text with many `<` and no `>` (a stored prompt of 30,000 `<` took
 * seconds for `fields=prompt:excerpt(10)`).
 */
function stripTags(html: string): string {
  let out = ''
  let from = 0
  for (let open = html.indexOf('<'); open !== -1; open = html.indexOf('<', from)) {
    const close = html.indexOf('>', open + 1)
    if (close === -1) break // no tag can close any more: the rest is text
    out += html.slice(from, open) + ' '
    from = close + 1
  }
  return out + html.slice(from)
}

/** The top-level keys a fields parameter names (for checking them against a record's keys). */
export function topLevelKeys(pick: Pick): string[] {
  return [...pick.children.keys()]
}
