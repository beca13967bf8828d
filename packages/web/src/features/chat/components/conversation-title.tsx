import { useState } from 'react'
import { toTitleCase } from '../../../lib/format.ts'

/** Header title, editable by click: Enter or blur saves (in title case), Escape cancels. */
export function ConversationTitle({
  title,
  onSave,
}: {
  title: string
  onSave: (title: string) => void
}) {
  const [editing, setEditing] = useState(false)
  const [draft, setDraft] = useState(title)

  const save = () => {
    if (!editing) return
    setEditing(false)
    const next = toTitleCase(draft.trim())
    if (!next || next === title) return
    onSave(next)
  }

  if (editing) {
    return (
      <input
        autoFocus
        aria-label="Conversation title"
        value={draft}
        onChange={(e) => setDraft(e.target.value)}
        onBlur={save}
        onKeyDown={(e) => {
          if (e.key === 'Enter') save()
          if (e.key === 'Escape') {
            setDraft(title)
            setEditing(false)
          }
        }}
        className="focus-ring w-full max-w-md rounded-md border border-slate-300 bg-white px-2 py-1 text-base font-semibold dark:border-slate-700 dark:bg-slate-900"
      />
    )
  }
  return (
    <button
      type="button"
      title="Click to rename"
      onClick={() => {
        setDraft(title)
        setEditing(true)
      }}
      className="focus-ring -mx-2 truncate rounded-md px-2 py-1 text-left text-base font-semibold text-slate-900 hover:bg-slate-100 dark:text-white dark:hover:bg-slate-800"
    >
      {title}
    </button>
  )
}
