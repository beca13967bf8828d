import { Coins, Eye, EyeOff } from 'lucide-react'
import { estimateTokens, formatNumber } from '../../../lib/format.ts'

export interface ChatFooterProps {
  balance: number | undefined
  draft: string
  showCosts: boolean
  onToggleCosts: () => void
}

/** 'Tokens available: N', the input estimate, and the Show/Hide costs toggle. */
export function ChatFooter({ balance, draft, showCosts, onToggleCosts }: ChatFooterProps) {
  return (
    <div className="mt-2 flex items-center justify-between gap-3 px-1 text-xs text-slate-500 dark:text-slate-400">
      <span className="inline-flex items-center gap-1.5">
        <Coins className="h-3.5 w-3.5" aria-hidden />
        Tokens available: {balance === undefined ? '…' : formatNumber(balance)}
        {draft.trim() && <span className="text-slate-400 dark:text-slate-500">· ~{estimateTokens(draft)} input tokens</span>}
      </span>
      <button
        type="button"
        onClick={onToggleCosts}
        aria-pressed={showCosts}
        className="focus-ring inline-flex items-center gap-1 rounded px-1.5 py-0.5 hover:text-slate-900 dark:hover:text-white"
      >
        {showCosts ? <EyeOff className="h-3.5 w-3.5" aria-hidden /> : <Eye className="h-3.5 w-3.5" aria-hidden />}
        {showCosts ? 'Hide costs' : 'Show costs'}
      </button>
    </div>
  )
}
