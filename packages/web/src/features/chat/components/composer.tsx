import { ArrowUp, Square } from 'lucide-react'
import { useLayoutEffect, useRef } from 'react'

/** Composer height cap: 40% of the window (spec §9). */
export const COMPOSER_MAX_HEIGHT_RATIO = 0.4

export interface ComposerProps {
  value: string
  onChange: (value: string) => void
  onSend: () => void
  sending: boolean
  empty: boolean
  /** An answer of this conversation is being written: Stop shows beside Send. */
  streaming?: boolean
  /** True from the Stop click until the server has stopped the answer. */
  stopping?: boolean
  onStop?: () => void
}

/** Textarea that grows to 40% of the window; Enter sends, Shift+Enter adds a line. */
export function Composer(props: ComposerProps) {
  const { value, onChange, onSend, sending, empty, streaming, stopping, onStop } = props
  const ref = useRef<HTMLTextAreaElement>(null)
  const canSend = value.trim().length > 0 && !sending

  useLayoutEffect(() => {
    const el = ref.current
    if (!el) return
    el.style.height = 'auto'
    const max = window.innerHeight * COMPOSER_MAX_HEIGHT_RATIO
    el.style.height = `${Math.min(el.scrollHeight, max)}px`
    el.style.overflowY = el.scrollHeight > max ? 'auto' : 'hidden'
  }, [value])

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault()
        if (canSend) onSend()
      }}
      className="relative flex items-end gap-2 rounded-2xl border border-slate-300 bg-white p-2 shadow-sm focus-within:border-brand-500 focus-within:ring-2 focus-within:ring-brand-500/20 dark:border-slate-700 dark:bg-slate-900"
    >
      <textarea
        ref={ref}
        rows={1}
        value={value}
        aria-label="Message"
        placeholder={empty ? 'What can I do for you today?' : 'Reply...'}
        onChange={(e) => onChange(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault()
            if (canSend) onSend()
          }
        }}
        className="max-h-[40vh] min-h-[2.5rem] flex-1 resize-none bg-transparent px-2 py-2 text-[0.9375rem] leading-6 text-slate-900 outline-none placeholder:text-slate-400 dark:text-white"
      />
      {streaming && onStop && (
        <button
          type="button"
          onClick={onStop}
          disabled={stopping}
          aria-label="Stop generating"
          title="Stop generating"
          className="focus-ring flex h-10 w-10 shrink-0 items-center justify-center rounded-xl border border-slate-300 bg-white text-slate-800 transition-colors hover:bg-slate-100 disabled:cursor-wait disabled:opacity-60 dark:border-slate-600 dark:bg-slate-800 dark:text-slate-100 dark:hover:bg-slate-700"
        >
          <Square className="h-4 w-4 fill-current" aria-hidden />
        </button>
      )}
      <button
        type="submit"
        disabled={!canSend}
        aria-label="Send message"
        className="focus-ring flex h-10 w-10 shrink-0 items-center justify-center rounded-xl bg-brand-600 text-white transition-colors hover:bg-brand-700 disabled:cursor-not-allowed disabled:bg-slate-200 disabled:text-slate-400 dark:disabled:bg-slate-800 dark:disabled:text-slate-500"
      >
        <ArrowUp className="h-5 w-5" aria-hidden />
      </button>
    </form>
  )
}
