import { Check, MessageSquare, Pencil, Plus, Trash2, X } from 'lucide-react'
import { memo, useState } from 'react'
import type { KeyboardEvent } from 'react'
import { useFeedback } from '../../../components/feedback/feedback-context.tsx'
import { cn } from '../../../lib/cn.ts'
import { formatRelativeDate } from '../../../lib/format.ts'
import type { ConversationRecord } from '../chat-types.ts'

export interface ConversationSidebarProps {
  open: boolean
  conversations: ConversationRecord[]
  loading: boolean
  error: boolean
  selectedId: string | null
  creating: boolean
  onSelect: (id: string) => void
  onNew: () => void
  onRename: (id: string, title: string) => void
  onDelete: (id: string) => void
  onClose: () => void
}

/**
 * 'Conversations' list with new, rename and delete; an overlay drawer below 768 px. Memoised: the
 * chat screen renders on every streamed chunk, the list only when its own props change.
 */
export const ConversationSidebar = memo(function ConversationSidebar(
  props: ConversationSidebarProps,
) {
  const { open, conversations, loading, error, onClose } = props
  return (
    <>
      {open && (
        <div
          aria-hidden
          onClick={onClose}
          className="absolute inset-0 z-20 animate-fade-in bg-slate-900/40 md:hidden"
          data-testid="sidebar-overlay"
        />
      )}
      <aside
        aria-label="Conversations"
        className={cn(
          'absolute inset-y-0 left-0 z-30 flex w-72 flex-col border-r border-slate-200 bg-slate-50 transition-transform duration-200 md:static md:z-auto dark:border-slate-800 dark:bg-slate-900',
          open ? 'translate-x-0' : '-translate-x-full md:hidden',
        )}
      >
        <div className="flex items-center justify-between gap-2 px-4 pt-4 pb-3">
          <h2 className="text-sm font-semibold tracking-wide text-slate-900 dark:text-white">
            Conversations
          </h2>
          <div className="flex items-center gap-1">
            <button
              type="button"
              onClick={props.onNew}
              disabled={props.creating}
              aria-label="New chat"
              title="New chat"
              className="focus-ring rounded-lg p-1.5 text-slate-600 hover:bg-slate-200 disabled:opacity-50 dark:text-slate-300 dark:hover:bg-slate-800"
            >
              <Plus className="h-4 w-4" aria-hidden />
            </button>
            <button
              type="button"
              onClick={onClose}
              aria-label="Close sidebar"
              className="focus-ring rounded-lg p-1.5 text-slate-600 hover:bg-slate-200 md:hidden dark:text-slate-300 dark:hover:bg-slate-800"
            >
              <X className="h-4 w-4" aria-hidden />
            </button>
          </div>
        </div>
        <div className="min-h-0 flex-1 overflow-y-auto px-2 pb-4">
          {error && (
            <p className="px-2 py-3 text-sm text-red-600 dark:text-red-400">
              Failed to load conversations
            </p>
          )}
          {!error && !loading && conversations.length === 0 && (
            <div className="px-4 py-10 text-center">
              <MessageSquare
                className="mx-auto mb-3 h-8 w-8 text-slate-300 dark:text-slate-600"
                aria-hidden
              />
              <p className="text-sm font-medium text-slate-700 dark:text-slate-300">
                No conversations yet
              </p>
              <p className="mt-1 text-xs text-slate-500 dark:text-slate-400">
                Start a new chat to begin
              </p>
            </div>
          )}
          <ul className="space-y-0.5">
            {conversations.map((c) => (
              <ConversationItem key={c.id} conversation={c} {...props} />
            ))}
          </ul>
        </div>
      </aside>
    </>
  )
})

function ConversationItem({
  conversation,
  selectedId,
  onSelect,
  onRename,
  onDelete,
}: ConversationSidebarProps & { conversation: ConversationRecord }) {
  const [editing, setEditing] = useState(false)
  const [draft, setDraft] = useState(conversation.title)
  const { confirm } = useFeedback()
  const selected = conversation.id === selectedId

  const save = () => {
    setEditing(false)
    const title = draft.trim()
    // Empty or unchanged titles are ignored (spec §5).
    if (!title || title === conversation.title) return
    onRename(conversation.id, title)
  }
  const onKey = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'Enter') save()
    if (e.key === 'Escape') setEditing(false)
  }

  if (editing) {
    return (
      <li className="flex items-center gap-1 rounded-lg bg-white px-2 py-1.5 shadow-sm dark:bg-slate-800">
        <input
          autoFocus
          aria-label="Conversation title"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={onKey}
          onBlur={save}
          className="focus-ring min-w-0 flex-1 rounded bg-transparent px-1 py-0.5 text-sm"
        />
        <button
          type="button"
          aria-label="Save title"
          onMouseDown={(e) => e.preventDefault()}
          onClick={save}
          className="rounded p-1 text-slate-500 hover:text-slate-900 dark:hover:text-white"
        >
          <Check className="h-3.5 w-3.5" aria-hidden />
        </button>
      </li>
    )
  }

  return (
    <li className="group relative">
      <button
        type="button"
        onClick={() => onSelect(conversation.id)}
        aria-current={selected ? 'true' : undefined}
        className={cn(
          'focus-ring block w-full rounded-lg px-3 py-2 pr-16 text-left transition-colors',
          selected
            ? 'bg-white shadow-sm ring-1 ring-slate-200 dark:bg-slate-800 dark:ring-slate-700'
            : 'hover:bg-slate-200/60 dark:hover:bg-slate-800/60',
        )}
      >
        <span className="block truncate text-sm font-medium text-slate-800 dark:text-slate-100">
          {conversation.title || 'New Chat'}
        </span>
        <span className="block text-xs text-slate-500 dark:text-slate-400">
          {formatRelativeDate(conversation.last_message_at || conversation.created)}
        </span>
      </button>
      <div className="absolute top-1/2 right-2 flex -translate-y-1/2 items-center gap-0.5 opacity-100 transition-opacity md:opacity-0 md:group-focus-within:opacity-100 md:group-hover:opacity-100">
        <button
          type="button"
          aria-label={`Rename ${conversation.title}`}
          onClick={() => {
            setDraft(conversation.title)
            setEditing(true)
          }}
          className="focus-ring rounded p-1.5 text-slate-500 hover:bg-slate-200 hover:text-slate-900 dark:text-slate-400 dark:hover:bg-slate-700 dark:hover:text-white"
        >
          <Pencil className="h-3.5 w-3.5" aria-hidden />
        </button>
        <button
          type="button"
          aria-label={`Delete ${conversation.title}`}
          onClick={async () => {
            const ok = await confirm('Are you sure you want to delete this conversation?', {
              title: 'Delete conversation',
              confirmLabel: 'Delete',
              destructive: true,
            })
            if (ok) onDelete(conversation.id)
          }}
          className="focus-ring rounded p-1.5 text-slate-500 hover:bg-red-50 hover:text-red-600 dark:text-slate-400 dark:hover:bg-red-950/50 dark:hover:text-red-400"
        >
          <Trash2 className="h-3.5 w-3.5" aria-hidden />
        </button>
      </div>
    </li>
  )
}
