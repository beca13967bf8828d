import { formatNumber } from '../../../lib/format.ts'
import type { RequestRecord } from '../chat-types.ts'

/**
 * 'Cost: N tokens' (tokens_input + tokens_output, spec §2) and, when the server reports it, the
 * credits actually charged (tokens times the model's multiplier, capped by the hold).
 */
export function CostLine({ record }: { record: RequestRecord }) {
  const tokens = (record.tokens_input ?? 0) + (record.tokens_output ?? 0)
  return (
    <p className="ml-auto flex flex-wrap items-center gap-x-1 px-1 text-xs text-slate-600 dark:text-slate-400">
      <span>Cost: {tokens} tokens</span>
      {typeof record.cost === 'number' && (
        <span>
          · {formatNumber(record.cost, 2)} {record.cost === 1 ? 'credit' : 'credits'} charged
        </span>
      )}
    </p>
  )
}
