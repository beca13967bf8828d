/** @module Auto-scroll rules of the message list (spec §2, §9). */

/** Distance from the bottom (px) beyond which a manual scroll turns following off. */
export const AUTO_SCROLL_THRESHOLD_PX = 100

export function distanceFromBottom(el: {
  scrollHeight: number
  scrollTop: number
  clientHeight: number
}): number {
  return Math.max(0, el.scrollHeight - el.scrollTop - el.clientHeight)
}

/** After a manual scroll: follow new content only if the view is within the threshold. */
export function shouldFollow(
  distance: number,
  threshold: number = AUTO_SCROLL_THRESHOLD_PX,
): boolean {
  return distance <= threshold
}

const SCROLL_KEYS = new Set(['ArrowUp', 'ArrowDown', 'PageUp', 'PageDown', 'Home', 'End'])

/** Keys that scroll the list by hand (arrow, page, home, end). */
export function isManualScrollKey(key: string): boolean {
  return SCROLL_KEYS.has(key)
}
