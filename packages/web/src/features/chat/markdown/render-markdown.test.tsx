import { cleanup, render, waitFor } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { renderMarkdown } from './render-markdown.tsx'

const show = (text: string, final = true) => render(<div>{renderMarkdown(text, final)}</div>)

describe('renderMarkdown', () => {
  afterEach(cleanup)

  it('renders markdown, and code blocks with their language, a copy button, then highlighting', async () => {
    const { container } = show('**bold**\n\n```js\nconst x = 1\n```')
    expect(container.querySelector('strong')?.textContent).toBe('bold')
    const code = container.querySelector('.code-block pre code')
    expect(code?.textContent).toBe('const x = 1')
    expect(container.querySelector('.code-block-bar')?.textContent).toContain('js')
    expect(container.querySelector('button[aria-label="Copy code"]')).not.toBeNull()
    // Highlighting arrives later, off the first render (its module loads first: more than
    // waitFor's default second on a loaded machine).
    await waitFor(
      () => expect(container.querySelector('.code-block code span.hljs-keyword')).not.toBeNull(),
      { timeout: 10_000 },
    )
    expect(code?.textContent).toBe('const x = 1')
  })

  it('drops scripts, event handlers and javascript: links', () => {
    const text = [
      '<script>window.pwned = 1</script>',
      '<img src="x" onerror="window.pwned = 1">',
      '[click](javascript:alert(1))',
      '[safe](https://example.com)',
    ].join('\n\n')
    const { container } = show(text)
    expect(container.querySelector('script')).toBeNull()
    expect(container.innerHTML).not.toContain('onerror')
    const hrefs = [...container.querySelectorAll('a')].map((a) => a.getAttribute('href'))
    expect(hrefs).toContain('https://example.com')
    expect(hrefs.some((h) => h?.startsWith('javascript'))).toBe(false)
    expect(container.querySelector('a[href="https://example.com"]')?.getAttribute('rel')).toContain(
      'noopener',
    )
  })

  it('never loads an image: it shows a link naming the host instead', () => {
    const { container } = show('Look: ![a cat](https://tracker.example.net/cat.png?u=1)')
    expect(container.querySelector('img')).toBeNull()
    const link = container.querySelector('a.image-link')
    expect(link?.getAttribute('href')).toBe('https://tracker.example.net/cat.png?u=1')
    expect(link?.textContent).toContain('a cat')
    expect(link?.textContent).toContain('(tracker.example.net)')
    expect(link?.getAttribute('rel')).toContain('noreferrer')
  })

  // A node can send any text: quotes nested a few thousand deep overflowed the parser's stack,
  // the render threw and the router's error page replaced the whole app.
  it('shows pathologically nested markdown as plain text instead of throwing', () => {
    const { container } = show(`${'>'.repeat(10000)} deep quote`)
    expect(container.textContent).toContain('deep quote')
  })

  it('parses a finished text once: the same elements come back', () => {
    const text = `Some *text* ${Math.random()}`
    expect(renderMarkdown(text, true)).toBe(renderMarkdown(text, true))
    expect(renderMarkdown(text, false)).not.toBe(renderMarkdown(text, false))
  })
})
