import { Check, Copy } from 'lucide-react'
import { useEffect, useState } from 'react'
import { copyText } from '../../../lib/clipboard.ts'
import { cn } from '../../../lib/cn.ts'

const tones = {
  default:
    'text-slate-600 hover:bg-slate-200/70 hover:text-slate-900 dark:text-slate-400 dark:hover:bg-slate-700/70 dark:hover:text-white',
  /** On the code block's dark bar, in both themes. */
  dark: 'text-slate-300 hover:bg-slate-700 hover:text-white',
}

/**
 * An icon button that copies `text`. For two seconds after, it reads (and is named) 'Copied', or
 * 'Copy failed' when the browser refused.
 */
export function CopyButton({
  text,
  label = 'Copy',
  tone = 'default',
  className,
}: {
  text: string
  label?: string
  tone?: keyof typeof tones
  className?: string
}) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle')
  useEffect(() => {
    if (state === 'idle') return
    const timer = setTimeout(() => setState('idle'), 2000)
    return () => clearTimeout(timer)
  }, [state])
  const said = state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : ''
  return (
    <button
      type="button"
      aria-label={said || label}
      title={label}
      onClick={async () => setState((await copyText(text)) ? 'copied' : 'failed')}
      className={cn(
        'focus-ring inline-flex items-center gap-1 rounded-md px-1.5 py-1 text-xs font-medium',
        tones[tone],
        className,
      )}
    >
      {state === 'copied' ? (
        <Check className="h-3.5 w-3.5" aria-hidden />
      ) : (
        <Copy className="h-3.5 w-3.5" aria-hidden />
      )}
      {said && <span aria-hidden>{said}</span>}
    </button>
  )
}
