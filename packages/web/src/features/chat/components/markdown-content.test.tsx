import { cleanup, render } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import MarkdownContent from './markdown-content.tsx'

describe('MarkdownContent', () => {
  afterEach(cleanup)

  it('renders markdown with highlighted code', () => {
    const { container } = render(<MarkdownContent text={'**bold**\n\n```js\nconst x = 1\n```'} />)
    expect(container.querySelector('strong')?.textContent).toBe('bold')
    expect(container.querySelector('pre code.hljs')).not.toBeNull()
  })

  it('drops scripts, event handlers and javascript: links', () => {
    const text = [
      '<script>window.pwned = 1</script>',
      '<img src="x" onerror="window.pwned = 1">',
      '[click](javascript:alert(1))',
      '[safe](https://example.com)',
    ].join('\n\n')
    const { container } = render(<MarkdownContent text={text} />)
    expect(container.querySelector('script')).toBeNull()
    expect(container.innerHTML).not.toContain('onerror')
    const hrefs = [...container.querySelectorAll('a')].map((a) => a.getAttribute('href'))
    expect(hrefs).toContain('https://example.com')
    expect(hrefs.some((h) => h?.startsWith('javascript'))).toBe(false)
    expect(container.querySelector('a[href="https://example.com"]')?.getAttribute('rel')).toContain('noopener')
  })
})
