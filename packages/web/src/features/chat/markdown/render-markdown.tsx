/**
 * @module Assistant markdown to React: parsed, sanitised and turned into elements once per text
 * (finished answers are cached, so scrolling a long conversation back and forth parses nothing
 * again). Code is highlighted later, off the critical path (code-block.tsx). Loaded lazily.
 */
import type { Element, ElementContent, Root } from 'hast'
import { toJsxRuntime, type Components } from 'hast-util-to-jsx-runtime'
import type { ReactNode } from 'react'
import { Fragment, jsx, jsxs } from 'react/jsx-runtime'
import rehypeSanitize from 'rehype-sanitize'
import remarkGfm from 'remark-gfm'
import remarkParse from 'remark-parse'
import remarkRehype from 'remark-rehype'
import { unified } from 'unified'
import { CodeBlock } from './code-block.tsx'
import { ExternalLink, ImageLink } from './links.tsx'

/** `pre > code` becomes one `code-block` element carrying its language and plain text. */
function codeBlocks() {
  return (tree: Root) => {
    const visit = (node: Root | Element) => {
      node.children = node.children.map((child) => {
        if (child.type !== 'element') return child
        const code =
          child.tagName === 'pre' && child.children.length === 1 ? child.children[0] : null
        if (code && code.type === 'element' && code.tagName === 'code') {
          const classes = ([] as unknown[]).concat(code.properties.className ?? [])
          const language =
            classes
              .map(String)
              .find((c) => c.startsWith('language-'))
              ?.slice(9) ?? ''
          return {
            type: 'element',
            tagName: 'code-block',
            properties: { language, code: textOf(code).replace(/\n$/, '') },
            children: [],
          } satisfies Element as ElementContent
        }
        visit(child)
        return child
      })
    }
    visit(tree)
  }
}

function textOf(node: ElementContent | Element): string {
  if (node.type === 'text') return node.value
  if (node.type === 'element') return node.children.map(textOf).join('')
  return ''
}

// No raw HTML ever (remark-rehype drops it); the sanitiser (GitHub's schema) removes scripts,
// on* handlers and javascript: URLs from what markdown itself produces.
const processor = unified()
  .use(remarkParse)
  .use(remarkGfm)
  .use(remarkRehype)
  .use(rehypeSanitize)
  .use(codeBlocks)
  .freeze()

const components = {
  a: ExternalLink,
  img: ImageLink,
  'code-block': CodeBlock,
} as unknown as Components

function render(text: string): ReactNode {
  try {
    const tree = processor.runSync(processor.parse(text)) as Root
    return toJsxRuntime(tree, { Fragment, jsx, jsxs, components, passKeys: true })
  } catch {
    // The parser and the tree walkers recurse: a node's answer nested a few thousand deep
    // overflows the stack. Plain text then, as before the renderer loads, not a crashed screen.
    return <p className="break-words whitespace-pre-wrap">{text}</p>
  }
}

const CACHE_LIMIT = 400
const cache = new Map<string, ReactNode>()

/**
 * Renders `text`; a finished text (`final`) is kept, a text still streaming is not (each frame
 * has a new one). The least recently used entries leave first.
 */
export function renderMarkdown(text: string, final: boolean): ReactNode {
  if (!final) return render(text)
  const hit = cache.get(text)
  if (hit !== undefined) {
    cache.delete(text)
    cache.set(text, hit)
    return hit
  }
  const node = render(text)
  cache.set(text, node)
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!)
  return node
}
