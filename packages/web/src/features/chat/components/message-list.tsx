import type { RefObject } from 'react'
import type { RequestRecord } from '../chat-types.ts'
import { AssistantReply } from './assistant-reply.tsx'

/** One exchange: the user's prompt and the assistant's reply to it. */
export interface ChatItem {
  key: string
  prompt: string
  requestId?: string
  record?: RequestRecord
  sendError?: string
  live: boolean
}

export interface MessageListProps {
  items: ChatItem[]
  showCosts: boolean
  onSettled: () => void
  containerRef: RefObject<HTMLDivElement | null>
  contentRef: RefObject<HTMLDivElement | null>
}

/** The scrollable conversation: user bubbles on the right, assistant replies on the left. */
export function MessageList({ items, showCosts, onSettled, containerRef, contentRef }: MessageListProps) {
  return (
    <div
      ref={containerRef}
      tabIndex={0}
      role="log"
      aria-label="Messages"
      aria-live="polite"
      className="min-h-0 flex-1 overflow-y-auto outline-none"
    >
      <div ref={contentRef} className="mx-auto flex max-w-3xl flex-col gap-6 px-4 py-6 sm:px-6">
        {items.map((item) => (
          <div key={item.key} className="flex flex-col gap-3">
            <div className="flex justify-end">
              <div className="max-w-[85%] rounded-2xl rounded-tr-md bg-brand-600 px-4 py-2.5 text-[0.9375rem] leading-7 whitespace-pre-wrap break-words text-white shadow-sm">
                {item.prompt}
              </div>
            </div>
            <div className="flex justify-start pr-4 sm:pr-12">
              <AssistantReply
                requestId={item.requestId}
                record={item.record}
                sendError={item.sendError}
                live={item.live}
                showCosts={showCosts}
                onSettled={onSettled}
              />
            </div>
          </div>
        ))}
      </div>
    </div>
  )
}
