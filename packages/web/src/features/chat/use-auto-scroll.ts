import { useCallback, useEffect, useRef } from 'react'
import { distanceFromBottom, isManualScrollKey, shouldFollow } from './auto-scroll.ts'

/**
 * Keeps a scroll container pinned to its bottom while content grows. A manual scroll (wheel,
 * touch, arrow/page/home/end keys) that leaves the view more than 100 px from the bottom turns
 * following off; scrolling back near the bottom, or calling `follow()`, turns it on again.
 * `attachKey` must change whenever the container element mounts anew.
 */
export function useAutoScroll<T extends HTMLElement, C extends HTMLElement>(attachKey: unknown) {
  const containerRef = useRef<T>(null)
  const contentRef = useRef<C>(null)
  const following = useRef(true)

  const scrollToBottom = useCallback(() => {
    const el = containerRef.current
    if (el) el.scrollTop = el.scrollHeight
  }, [])

  const follow = useCallback(() => {
    following.current = true
    requestAnimationFrame(scrollToBottom)
  }, [scrollToBottom])

  useEffect(() => {
    const el = containerRef.current
    if (!el) return
    let manual = false
    const markManual = () => {
      manual = true
    }
    const onKey = (e: KeyboardEvent) => {
      if (isManualScrollKey(e.key)) manual = true
    }
    const onScroll = () => {
      // Only a scroll the user caused may change the mode; our own scrollTop writes may not.
      if (!manual) return
      manual = false
      following.current = shouldFollow(distanceFromBottom(el))
    }
    el.addEventListener('wheel', markManual, { passive: true })
    el.addEventListener('touchmove', markManual, { passive: true })
    el.addEventListener('keydown', onKey)
    el.addEventListener('scroll', onScroll, { passive: true })
    const observer =
      typeof ResizeObserver === 'undefined'
        ? null
        : new ResizeObserver(() => {
            if (following.current) scrollToBottom()
          })
    if (observer && contentRef.current) observer.observe(contentRef.current)
    return () => {
      el.removeEventListener('wheel', markManual)
      el.removeEventListener('touchmove', markManual)
      el.removeEventListener('keydown', onKey)
      el.removeEventListener('scroll', onScroll)
      observer?.disconnect()
    }
  // attachKey changes when the scrolled element mounts or is replaced, so listeners re-attach.
  }, [scrollToBottom, attachKey])

  return { containerRef, contentRef, follow, following }
}
