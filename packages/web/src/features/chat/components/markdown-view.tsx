import { useMemo } from 'react'
import { useMarkdownRenderer } from '../markdown/markdown-loader.ts'

/** Rendered markdown; plain text until the renderer has loaded (it is not on the first load). */
export function MarkdownView({ text, final }: { text: string; final: boolean }) {
  const renderer = useMarkdownRenderer()
  const node = useMemo(() => renderer?.renderMarkdown(text, final), [renderer, text, final])
  if (!renderer)
    return <p className="text-[0.9375rem] leading-7 break-words whitespace-pre-wrap">{text}</p>
  return <div className="markdown">{node}</div>
}
