import { useEffect, useRef, useState } from 'react'

/** Typing animation speed (spec §9). */
export const TYPING_MS_PER_CHAR = 5

/** How many characters should be visible after `elapsedMs`, starting from `from`. */
export function typedLength(from: number, elapsedMs: number, target: number): number {
  return Math.min(target, from + Math.floor(elapsedMs / TYPING_MS_PER_CHAR))
}

/** How far each reply had typed, so a reply scrolled out of view and back does not start over. */
const typedSoFar = new Map<string, number>()

/**
 * Reveals `text` at 5 ms per character. When `animate` is false (history loaded from the server)
 * the whole text shows at once. New text appended while typing continues from where it was.
 * `id` names the reply, so its progress survives the row being unmounted while off screen.
 */
export function useTypewriter(text: string, animate: boolean, id?: string): string {
  const [shown, setShown] = useState(() =>
    animate ? (id ? (typedSoFar.get(id) ?? 0) : 0) : text.length,
  )
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
      const next = Math.max(
        shownRef.current,
        typedLength(base, performance.now() - start, text.length),
      )
      if (next !== shownRef.current) {
        shownRef.current = next
        if (id) typedSoFar.set(id, next)
        setShown(next)
      }
      if (next < text.length) frame = requestAnimationFrame(tick)
    }
    frame = requestAnimationFrame(tick)
    return () => cancelAnimationFrame(frame)
  }, [text, animate, id])

  return text.slice(0, Math.min(shown, text.length))
}
