/**
 * @module The common case of an answer without the markdown renderer: paragraphs of plain text
 * with `**bold**` and `*italic*` words. Such text renders here, in the chat's own code, to exactly
 * what the full renderer (render-markdown.tsx: remark, GFM, the sanitiser) would make of it, so
 * opening a conversation does not wait for that 150 KB module. Anything else (a list, a heading,
 * code, a link, an escape, an underscore, an odd asterisk...) returns null and goes to the full
 * renderer. The test checks the equivalence on random texts (simple-markdown.test.tsx).
 */
import { createElement, Fragment, type ReactNode } from 'react'

/** Characters with a markdown meaning this subset does not handle anywhere in the text. */
// eslint-disable-next-line no-control-regex -- NUL is one of the characters this subset refuses.
const UNSUPPORTED_CHAR = /[\\`<&[\]_~|\t\r\f\v\u0000]/
/** GFM autolinks (URLs, www., e-mail addresses). */
const AUTOLINK = /:\/\/|www\.|@|mailto:|xmpp:/i
/**
 * Line starts that make a block other than a paragraph (or might: all refused). A colon may open
 * a table's delimiter row: GFM takes `a` then `:-` as a one-column table, with no pipe anywhere.
 */
const BLOCK_START = /^(?: {4}| {0,3}(?:[#>+=:-]|\*(?: |$)|\d{1,9}[.)]))/
/** A thematic break made of asterisks. */
const THEMATIC_BREAK = /^ {0,3}(?:\* *){3,}$/
/** Emphasis this subset renders: delimiters opening after a space and closing before one. */
const EMPHASIS = /(^|[ \n])(\*\*?)([A-Za-z0-9][^*]*?[A-Za-z0-9]|[A-Za-z0-9])\2(?=$|[ \n.,;:!?])/g

function inline(text: string, key: string): ReactNode[] | null {
  const out: ReactNode[] = []
  let last = 0
  let n = 0
  for (const m of text.matchAll(EMPHASIS)) {
    const start = m.index + m[1].length
    if (start > last) out.push(text.slice(last, start))
    out.push(createElement(m[2] === '**' ? 'strong' : 'em', { key: `${key}-${n++}` }, m[3]))
    last = start + m[2].length * 2 + m[3].length
  }
  if (last < text.length) out.push(text.slice(last))
  // Any asterisk left over is one this subset does not understand.
  if (out.some((part) => typeof part === 'string' && part.includes('*'))) return null
  // Adjacent strings as one text node, as the full renderer makes them.
  const merged: ReactNode[] = []
  for (const part of out) {
    if (typeof part === 'string' && typeof merged.at(-1) === 'string')
      merged[merged.length - 1] += part
    else merged.push(part)
  }
  return merged
}

/** The React nodes of `text`, or null when it needs the full markdown renderer. */
export function simpleMarkdown(text: string): ReactNode | null {
  if (/^[ \n]*$/.test(text) || UNSUPPORTED_CHAR.test(text) || AUTOLINK.test(text)) return null
  const paragraphs: string[][] = [[]]
  for (const line of text.split('\n')) {
    // Markdown's blank lines and outer spaces are ASCII spaces only (String.trim takes more).
    if (/^ *$/.test(line)) {
      if (paragraphs.at(-1)!.length) paragraphs.push([])
      continue
    }
    // Two trailing spaces make a hard line break; a paragraph's lines lose their outer spaces.
    if (/ {2}$/.test(line) || BLOCK_START.test(line) || THEMATIC_BREAK.test(line)) return null
    paragraphs.at(-1)!.push(line.replace(/^ +| +$/g, ''))
  }
  if (!paragraphs.at(-1)!.length) paragraphs.pop()
  const children: ReactNode[] = []
  for (const [i, lines] of paragraphs.entries()) {
    const content = inline(lines.join('\n'), `p${i}`)
    if (!content) return null
    // Between blocks the full renderer keeps a newline text node.
    if (i > 0) children.push('\n')
    children.push(createElement('p', { key: `p${i}` }, ...content))
  }
  return createElement(Fragment, null, ...children)
}
