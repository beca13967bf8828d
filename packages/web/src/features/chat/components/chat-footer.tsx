import { Coins, Eye, EyeOff } from 'lucide-react'
import type { QuoteResult } from '../../../lib/api.ts'
import { estimateTokens, formatNumber } from '../../../lib/format.ts'

export interface ChatFooterProps {
  /** Credits the user can spend now (balance minus holds), undefined while loading. */
  available: number | undefined
  draft: string
  quote: QuoteResult | undefined
  showCosts: boolean
  onToggleCosts: () => void
}

/**
 * Whole credits, rounded as `toLocaleString` rounds (half away from zero): the same figure the
 * server's refusal calls available (its formatCreditsLikeFooter).
 */
export function formatAvailable(credits: number): string {
  return formatNumber(credits)
}

/**
 * 'Tokens available: N' and the Show/Hide costs toggle on one line; while typing, a second line
 * with the input estimate and the most the message can cost (or what it needs when it cannot).
 */
export function ChatFooter({ available, draft, quote, showCosts, onToggleCosts }: ChatFooterProps) {
  const typing = draft.trim().length > 0
  const refused = quote && quote.max_cost === null
  return (
    <div className="mt-2 px-1 text-xs text-slate-600 dark:text-slate-400">
      <div className="flex items-center justify-between gap-3">
        <span className="inline-flex min-w-0 items-center gap-1.5">
          <Coins className="h-3.5 w-3.5 shrink-0" aria-hidden />
          <span className="truncate">
            Tokens available: {available === undefined ? '…' : formatAvailable(available)}
          </span>
        </span>
        <button
          type="button"
          onClick={onToggleCosts}
          aria-pressed={showCosts}
          className="focus-ring inline-flex shrink-0 items-center gap-1 rounded px-1.5 py-0.5 hover:text-slate-900 dark:hover:text-white"
        >
          {showCosts ? (
            <EyeOff className="h-3.5 w-3.5" aria-hidden />
          ) : (
            <Eye className="h-3.5 w-3.5" aria-hidden />
          )}
          {showCosts ? 'Hide costs' : 'Show costs'}
        </button>
      </div>
      {typing && (
        <p className="mt-1 flex flex-wrap gap-x-2 pl-5" data-testid="send-estimate">
          <span>~{estimateTokens(draft)} input tokens</span>
          {refused ? (
            <span className="font-medium text-red-700 dark:text-red-400">
              Not enough credits: at least {formatNumber(Math.ceil(quote.min_cost))} needed
            </span>
          ) : (
            showCosts &&
            quote?.max_cost != null && (
              <span>· at most {formatNumber(quote.max_cost, 2)} credits for this message</span>
            )
          )}
          {!refused && quote && quote.max_output && quote.output_cap < quote.max_output && (
            <span className="font-medium text-amber-800 dark:text-amber-300">
              · Your balance pays for a shorter answer: up to {formatNumber(quote.output_cap)}{' '}
              tokens
            </span>
          )}
        </p>
      )}
    </div>
  )
}
