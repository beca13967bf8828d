import { useCallback, useEffect, useRef } from 'react'
import { distanceFromBottom, isManualScrollKey, shouldFollow } from './auto-scroll.ts'

/**
 * Keeps a scroll container pinned to its bottom while content grows. A manual scroll (wheel,
 * touch, arrow/page/home/end keys, or dragging the scroll bar) that leaves the view more than 100 px from the bottom turns
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
    // Dragging the scroll bar: a press on the container itself (its bar), until released.
    let dragging = false
    const markManual = () => {
      manual = true
    }
    const onPointerDown = (e: PointerEvent) => {
      if (e.target === el) dragging = true
    }
    const onPointerUp = () => {
      dragging = false
    }
    const onKey = (e: KeyboardEvent) => {
      if (!isManualScrollKey(e.key)) return
      manual = true
      // Home and End jump at once: the browser's animated jump would be cut short by rows being
      // measured on the way (the list is virtualised). End means "the newest": follow again.
      if (e.key === 'End') {
        e.preventDefault()
        following.current = true
        scrollToBottom()
      } else if (e.key === 'Home') {
        e.preventDefault()
        el.scrollTop = 0
      }
    }
    const onScroll = () => {
      // Only a scroll the user caused may change the mode; our own scrollTop writes may not.
      if (!manual && !dragging) return
      manual = false
      following.current = shouldFollow(distanceFromBottom(el))
    }
    el.addEventListener('wheel', markManual, { passive: true })
    el.addEventListener('touchmove', markManual, { passive: true })
    el.addEventListener('keydown', onKey)
    el.addEventListener('scroll', onScroll, { passive: true })
    el.addEventListener('pointerdown', onPointerDown)
    window.addEventListener('pointerup', onPointerUp)
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
      el.removeEventListener('pointerdown', onPointerDown)
      window.removeEventListener('pointerup', onPointerUp)
      observer?.disconnect()
    }
    // attachKey changes when the scrolled element mounts or is replaced, so listeners re-attach.
  }, [scrollToBottom, attachKey])

  return { containerRef, contentRef, follow, following }
}
