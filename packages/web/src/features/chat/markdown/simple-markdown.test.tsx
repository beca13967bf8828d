import fc from 'fast-check'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { renderMarkdown } from './render-markdown.tsx'
import { simpleMarkdown } from './simple-markdown.tsx'

const html = (node: React.ReactNode) => renderToStaticMarkup(<>{node}</>)
const full = (text: string) => html(renderMarkdown(text, false))

describe('simpleMarkdown', () => {
  it('renders paragraphs with bold and italic words as the full renderer does', () => {
    for (const text of [
      'Reply number 200: once upon a time there was a **tiny** story.',
      'Once upon a time, there was a *little* girl named Lily.\nShe loved to play.\n\nOne day, she saw a **big** red ball!',
      '  Leading spaces, and trailing ones \nnext line\n\n\n   third paragraph ',
      '**Bold** at the start, and *one*.',
      'Numbers 123 and symbols: # = + - > are fine mid-line; so are "quotes" and (brackets).',
      'Ünïcödé text and emoji 🦊 and a fullwidth\u3000space.',
    ]) {
      const simple = simpleMarkdown(text)
      expect(simple, text).not.toBeNull()
      expect(html(simple), text).toBe(full(text))
    }
  })

  it('leaves everything else to the full renderer', () => {
    for (const text of [
      '',
      '   \n  ',
      '# Heading',
      '- a list',
      '* a list',
      '1. a list',
      '> a quote',
      '***',
      '* * *',
      'text\n===',
      '    indented code',
      'some `code`',
      '```\ncode\n```',
      'a [link](https://example.com)',
      'see https://example.com',
      'mail me@example.com',
      'www.example.com',
      'an_underscore',
      '~~struck~~',
      'a | table',
      'a\n:-',
      'a\n  :--:',
      'hard  \nbreak',
      'escaped \\*star\\*',
      '<b>html</b>',
      'AT&amp;T',
      'odd * asterisk',
      'intra**word**bold',
      '**unclosed bold',
    ]) {
      expect(simpleMarkdown(text), JSON.stringify(text)).toBeNull()
    }
  })

  it('never differs from the full renderer when it renders (random texts)', () => {
    const piece = fc.constantFrom(
      'a',
      'Lily',
      '7',
      ' ',
      '  ',
      '\n',
      '\n\n',
      '*',
      '**',
      '.',
      ',',
      '!',
      '?',
      ':',
      '(',
      ')',
      '#',
      '-',
      '=',
      '>',
      '+',
      '1.',
      '"',
      "'",
      'é',
      '🦊',
      '\u3000',
      '\u2028',
      '%',
      '/',
    )
    let rendered = 0
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 24 }), (pieces) => {
        const text = pieces.join('')
        const simple = simpleMarkdown(text)
        if (simple === null) return
        rendered++
        expect(html(simple)).toBe(full(text))
      }),
      { numRuns: 3000 },
    )
    // The property is not vacuous: a good share of the texts took the simple path.
    expect(rendered).toBeGreaterThan(300)
  })
})
