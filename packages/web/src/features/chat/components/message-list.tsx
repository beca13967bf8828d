import { useVirtualizer } from '@tanstack/react-virtual'
import { useEffect, useLayoutEffect, type RefObject } from 'react'
import { Loader2 } from 'lucide-react'
import type { RequestRecord } from '../chat-types.ts'
import type { ChatItem } from '../use-chat-items.ts'
import { MessageRow } from './message-row.tsx'

export interface MessageListProps {
  items: ChatItem[]
  showCosts: boolean
  /** Key of the item whose answer may be regenerated (the last, finished), if any. */
  regenerableKey: string | null
  onRegenerate: (record: RequestRecord) => void
  /** Older history exists on the server; `onLoadOlder` fetches the next page of 50. */
  hasOlder: boolean
  loadingOlder: boolean
  onLoadOlder: () => void
  containerRef: RefObject<HTMLDivElement | null>
  contentRef: RefObject<HTMLDivElement | null>
}

const LINE_PX = 28

/** A first guess of a row's height (it is measured once rendered). */
export function estimateRowHeight(item: ChatItem): number {
  const promptLines = Math.max(1, Math.ceil(item.prompt.length / 60))
  const answer = item.record?.response ?? ''
  const answerLines = Math.max(
    1,
    Math.ceil(answer.length / 80) + (answer.match(/\n/g)?.length ?? 0),
  )
  return 20 + promptLines * LINE_PX + 12 + 24 + answerLines * LINE_PX + 32
}

/**
 * The conversation, virtualised: only the rows in (and just around) the view are in the page,
 * so a long history costs what a short one does. It opens at the bottom; reaching the top loads
 * the previous 50 requests, keeping the reader's place.
 */
export function MessageList(props: MessageListProps) {
  const { items, containerRef, contentRef, hasOlder, loadingOlder, onLoadOlder } = props

  // Before the virtualiser attaches (its layout effect runs after this one): start at the bottom,
  // so the first frame already shows the newest messages.
  useLayoutEffect(() => {
    const el = containerRef.current
    if (el) el.scrollTop = el.scrollHeight
  }, [containerRef])

  const virtualizer = useVirtualizer({
    count: items.length,
    getScrollElement: () => containerRef.current,
    estimateSize: (i) => estimateRowHeight(items[i]),
    getItemKey: (i) => items[i].key,
    initialOffset: () => Number.MAX_SAFE_INTEGER,
    // Before the list is measured: assume it is as tall as the window, so the first render
    // already holds the rows at the bottom.
    initialRect: { width: 0, height: window.innerHeight },
    overscan: 3,
    paddingStart: 24,
    paddingEnd: 24,
    gap: 24,
    // Rows added above (older history) keep the view where it was.
    anchorTo: 'end',
  })
  const rows = virtualizer.getVirtualItems()
  const first = rows[0]?.index

  useEffect(() => {
    if (first !== undefined && first <= 1 && hasOlder && !loadingOlder) onLoadOlder()
  }, [first, hasOlder, loadingOlder, onLoadOlder])

  return (
    <div
      ref={containerRef}
      tabIndex={0}
      role="log"
      aria-label="Messages"
      aria-live="polite"
      className="relative min-h-0 flex-1 overflow-y-auto outline-none [overflow-anchor:none]"
    >
      {loadingOlder && (
        <div className="sticky top-0 z-10 flex h-0 justify-center">
          <span className="mt-2 inline-flex items-center gap-2 rounded-full bg-white/90 px-3 py-1 text-xs text-slate-600 shadow dark:bg-slate-800/90 dark:text-slate-300">
            <Loader2 className="h-3.5 w-3.5 animate-spin" aria-hidden /> Loading earlier messages…
          </span>
        </div>
      )}
      <div
        ref={contentRef}
        className="relative mx-auto w-full max-w-3xl"
        style={{ height: virtualizer.getTotalSize() }}
      >
        {rows.map((row) => {
          const item = items[row.index]
          return (
            <div
              key={row.key}
              data-index={row.index}
              ref={virtualizer.measureElement}
              className="absolute top-0 left-0 w-full px-4 sm:px-6"
              style={{ transform: `translateY(${row.start}px)` }}
            >
              <MessageRow
                item={item}
                showCosts={props.showCosts}
                canRegenerate={props.regenerableKey === item.key}
                onRegenerate={props.onRegenerate}
              />
            </div>
          )
        })}
      </div>
    </div>
  )
}
