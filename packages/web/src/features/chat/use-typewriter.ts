import { useEffect, useRef, useState } from 'react'

/** Typing animation speed (spec §9). */
export const TYPING_MS_PER_CHAR = 5

/** How many characters should be visible after `elapsedMs`, starting from `from`. */
export function typedLength(from: number, elapsedMs: number, target: number): number {
  return Math.min(target, from + Math.floor(elapsedMs / TYPING_MS_PER_CHAR))
}

/**
 * Reveals `text` at 5 ms per character. When `animate` is false (history loaded from the server)
 * the whole text shows at once. New text appended while typing continues from where it was.
 */
export function useTypewriter(text: string, animate: boolean): string {
  const [shown, setShown] = useState(animate ? 0 : text.length)
  const shownRef = useRef(shown)
  shownRef.current = shown

  useEffect(() => {
    if (!animate) {
      setShown(text.length)
      return
    }
    if (shownRef.current >= text.length) return
    let frame = 0
    const start = performance.now()
    const base = shownRef.current
    const tick = () => {
      // performance.now() rather than the frame timestamp: the latter can predate `start`.
      const next = Math.max(shownRef.current, typedLength(base, performance.now() - start, text.length))
      if (next !== shownRef.current) {
        shownRef.current = next
        setShown(next)
      }
      if (next < text.length) frame = requestAnimationFrame(tick)
    }
    frame = requestAnimationFrame(tick)
    return () => cancelAnimationFrame(frame)
  }, [text, animate])

  return text.slice(0, Math.min(shown, text.length))
}
