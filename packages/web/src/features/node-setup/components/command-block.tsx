import { Check, Copy } from 'lucide-react'
import { useState } from 'react'

/** A shell command with a copy button. */
export function CommandBlock({ command, label }: { command: string; label: string }) {
  const [copied, setCopied] = useState(false)
  const copy = () => {
    navigator.clipboard
      ?.writeText(command)
      .then(() => {
        setCopied(true)
        setTimeout(() => setCopied(false), 1500)
      })
      .catch((err: unknown) => console.warn('Copy failed', err))
  }
  return (
    <div className="flex items-center gap-2 rounded-lg bg-slate-900 py-1.5 pr-1.5 pl-4 font-mono text-sm text-slate-100 dark:bg-slate-950 dark:ring-1 dark:ring-slate-800">
      <span className="text-slate-500 select-none" aria-hidden>
        $
      </span>
      <code className="min-w-0 flex-1 overflow-x-auto py-1 whitespace-nowrap">{command}</code>
      <button
        type="button"
        onClick={copy}
        aria-label={copied ? `${label} copied` : `Copy ${label}`}
        className="focus-ring shrink-0 rounded-md p-1.5 text-slate-400 hover:bg-slate-800 hover:text-white"
      >
        {copied ? (
          <Check className="h-4 w-4 text-emerald-400" aria-hidden />
        ) : (
          <Copy className="h-4 w-4" aria-hidden />
        )}
      </button>
    </div>
  )
}
