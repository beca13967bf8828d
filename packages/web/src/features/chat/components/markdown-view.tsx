import { useMemo } from 'react'
import { useMarkdownRenderer } from '../markdown/markdown-loader.ts'
import { simpleMarkdown } from '../markdown/simple-markdown.tsx'

/**
 * Rendered markdown. Plain paragraphs with bold and italic words (most answers) render at once
 * from the chat's own code, exactly as the full renderer would; anything else waits for the full
 * renderer, showing plain text until it has loaded (it is not on the first load).
 */
export function MarkdownView({ text, final }: { text: string; final: boolean }) {
  const simple = useMemo(() => simpleMarkdown(text), [text])
  if (simple !== null) return <div className="markdown">{simple}</div>
  return <FullMarkdown text={text} final={final} />
}

function FullMarkdown({ text, final }: { text: string; final: boolean }) {
  const renderer = useMarkdownRenderer()
  const node = useMemo(() => renderer?.renderMarkdown(text, final), [renderer, text, final])
  if (!renderer)
    return <p className="text-[0.9375rem] leading-7 break-words whitespace-pre-wrap">{text}</p>
  return <div className="markdown">{node}</div>
}
