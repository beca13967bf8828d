import { memo } from 'react'
import type { RequestRecord } from '../chat-types.ts'
import type { ChatItem } from '../use-chat-items.ts'
import { AssistantReply } from './assistant-reply.tsx'
import { CopyButton } from './copy-button.tsx'

export interface MessageRowProps {
  item: ChatItem
  showCosts: boolean
  canRegenerate: boolean
  onRegenerate: (record: RequestRecord) => void
}

/** One exchange: the user's prompt on the right, the assistant's reply on the left. */
export const MessageRow = memo(
  function MessageRow({ item, showCosts, canRegenerate, onRegenerate }: MessageRowProps) {
    return (
      <div className="flex flex-col gap-3">
        <div className="group flex items-start justify-end gap-1" data-role="user-message">
          <CopyButton
            text={item.prompt}
            label="Copy message"
            className="mt-1.5 md:opacity-0 md:group-focus-within:opacity-100 md:group-hover:opacity-100"
          />
          <div className="max-w-[85%] rounded-2xl rounded-tr-md bg-brand-600 px-4 py-2.5 text-[0.9375rem] leading-7 break-words whitespace-pre-wrap text-white shadow-sm">
            {item.prompt}
          </div>
        </div>
        <div className="flex min-w-0 justify-start pr-4 sm:pr-12">
          <AssistantReply
            record={item.record}
            sendError={item.sendError}
            live={item.live}
            showCosts={showCosts}
            canRegenerate={canRegenerate}
            onRegenerate={onRegenerate}
          />
        </div>
      </div>
    )
  },
  // Items are rebuilt on every change of the list; a row renders again only when its own data did.
  (a, b) =>
    a.item.key === b.item.key &&
    a.item.record === b.item.record &&
    a.item.prompt === b.item.prompt &&
    a.item.sendError === b.item.sendError &&
    a.item.live === b.item.live &&
    a.showCosts === b.showCosts &&
    a.canRegenerate === b.canRegenerate &&
    a.onRegenerate === b.onRegenerate,
)
