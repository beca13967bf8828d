import { useEffect, useState } from 'react'
import type { ReactNode } from 'react'
import { CopyButton } from '../components/copy-button.tsx'

type Highlighter = typeof import('./highlight.ts')

const highlighted = new Map<string, ReactNode>()
let highlighter: Promise<Highlighter> | null = null

/** Runs `work` when the browser is idle (soon after, where requestIdleCallback is missing). */
function whenIdle(work: () => void): () => void {
  if (typeof requestIdleCallback === 'function') {
    const id = requestIdleCallback(work, { timeout: 1000 })
    return () => cancelIdleCallback(id)
  }
  const id = setTimeout(work, 50)
  return () => clearTimeout(id)
}

/** The highlighted code once ready; plain text renders first and while the code still changes. */
function useHighlighted(code: string, language: string): ReactNode | null {
  const key = `${language}\u0000${code}`
  const [result, setResult] = useState<{ key: string; node: ReactNode } | null>(null)
  useEffect(() => {
    if (highlighted.has(key)) return
    let cancelled = false
    let cancelIdle = () => {}
    // A block still streaming changes every frame: wait until it has been still for a moment.
    const settle = setTimeout(() => {
      cancelIdle = whenIdle(() => {
        highlighter ??= import('./highlight.ts')
        void highlighter.then((h) => {
          const node = h.highlight(code, language)
          highlighted.set(key, node)
          if (!cancelled) setResult({ key, node })
        })
      })
    }, 150)
    return () => {
      cancelled = true
      clearTimeout(settle)
      cancelIdle()
    }
  }, [key, code, language])
  if (highlighted.has(key)) return highlighted.get(key) ?? null
  return result?.key === key ? result.node : null
}

/** A fenced code block: its language, a Copy code button, and the code (highlighted when idle). */
export function CodeBlock({ language = '', code = '' }: { language?: string; code?: string }) {
  const node = useHighlighted(code, language)
  return (
    <div className="code-block">
      <div className="code-block-bar">
        <span>{language || 'code'}</span>
        <CopyButton text={code} label="Copy code" tone="dark" />
      </div>
      <pre>
        <code className={language ? `hljs language-${language}` : 'hljs'}>{node ?? code}</code>
      </pre>
    </div>
  )
}
