import { useQueryClient } from '@tanstack/react-query'
import { AlertTriangle, RefreshCw, RotateCcw, Square } from 'lucide-react'
import type { ReactNode } from 'react'
import { memo, useState } from 'react'
import { useFeedback } from '../../../components/feedback/feedback-context.tsx'
import { retryRequest } from '../../../lib/api.ts'
import { errorMessage } from '../../../lib/api-error.ts'
import { cn } from '../../../lib/cn.ts'
import { pb } from '../../../lib/pb.ts'
import { isTerminal, type RequestRecord } from '../chat-types.ts'
import { writeHistory } from '../history-api.ts'
import { useTypewriter } from '../use-typewriter.ts'
import { CopyButton } from './copy-button.tsx'
import { CostLine } from './cost-line.tsx'
import { MarkdownView } from './markdown-view.tsx'

export interface AssistantReplyProps {
  /** The request's record, live from history (absent until the send is known to the server). */
  record?: RequestRecord
  /** 'Error: {message}' when the send call itself failed. */
  sendError?: string
  /** True for replies started in this visit: they type out. */
  live: boolean
  showCosts: boolean
  /** The conversation's last answer, finished: it offers Regenerate. */
  canRegenerate: boolean
  onRegenerate: (record: RequestRecord) => void
}

const bubble = 'max-w-full rounded-2xl rounded-tl-md px-4 py-3'
const action =
  'focus-ring inline-flex items-center gap-1 rounded-md px-1.5 py-1 text-xs font-medium text-slate-500 hover:bg-slate-200/70 hover:text-slate-900 disabled:opacity-50 dark:text-slate-400 dark:hover:bg-slate-700/70 dark:hover:text-white'

/** One assistant turn: Thinking..., the streamed answer with its actions and cost, or a failure. */
export const AssistantReply = memo(function AssistantReply(props: AssistantReplyProps) {
  const { record, sendError, showCosts, canRegenerate, onRegenerate } = props
  // Replies still streaming when first seen type out as well; finished ones show at once.
  const [animate, setAnimate] = useState(props.live || (!!record && !isTerminal(record.status)))
  const status = record?.status ?? 'pending'
  const text = useTypewriter(record?.response ?? '', animate, record?.id)

  if (sendError) return <ErrorBubble title={sendError} />

  // Stopped before any text was written: nothing to show, nothing was charged.
  if (status === 'cancelled' && !record?.response) {
    return (
      <div className="flex min-w-0 max-w-full flex-col">
        <div
          className={cn(
            bubble,
            'border border-slate-200 bg-slate-50 text-sm text-slate-600 dark:border-slate-700 dark:bg-slate-800/40 dark:text-slate-300',
          )}
        >
          <p className="flex items-center gap-2 font-medium">
            <Square className="h-3.5 w-3.5 fill-current" aria-hidden />
            Stopped
          </p>
          <p className="mt-1">
            The answer was stopped before any text was written. Nothing was charged.
          </p>
        </div>
        {record && canRegenerate && (
          <div className="mt-1 flex pl-1">
            <button type="button" className={action} onClick={() => onRegenerate(record)}>
              <RefreshCw className="h-3.5 w-3.5" aria-hidden />
              Regenerate
            </button>
          </div>
        )}
      </div>
    )
  }

  if (status === 'failed') {
    const detail =
      record?.error_message ||
      (animate ? 'An error occurred while processing your request' : 'Request failed')
    return (
      <ErrorBubble
        title={animate ? 'Request failed - please try again' : 'Request Failed'}
        detail={detail}
      >
        <div className="mt-3 flex flex-wrap gap-2">
          {record?.can_retry && <RetryButton record={record} onRetried={() => setAnimate(true)} />}
          {record && !record.can_retry && canRegenerate && (
            <button
              type="button"
              className={cn(action, 'border border-red-300 dark:border-red-800')}
              onClick={() => onRegenerate(record)}
            >
              <RefreshCw className="h-3.5 w-3.5" aria-hidden />
              Regenerate
            </button>
          )}
        </div>
      </ErrorBubble>
    )
  }

  if (!record?.response) {
    return (
      <div className={cn(bubble, 'bg-slate-100 dark:bg-slate-800/70')}>
        <span className="inline-flex items-center gap-2 text-sm text-slate-600 dark:text-slate-400">
          <span className="flex gap-1" aria-hidden>
            <span className="h-1.5 w-1.5 animate-bounce rounded-full bg-slate-400 [animation-delay:-0.3s]" />
            <span className="h-1.5 w-1.5 animate-bounce rounded-full bg-slate-400 [animation-delay:-0.15s]" />
            <span className="h-1.5 w-1.5 animate-bounce rounded-full bg-slate-400" />
          </span>
          Thinking...
        </span>
      </div>
    )
  }

  const typing = text.length < record.response.length || (record.is_partial && !isTerminal(status))
  // A stopped answer keeps its text, its actions and what it cost.
  const stopped = status === 'cancelled'
  const done = (status === 'completed' || stopped) && !typing
  return (
    <div className="flex min-w-0 max-w-full flex-col">
      <div
        className={cn(
          bubble,
          'bg-slate-100 text-slate-900 dark:bg-slate-800/70 dark:text-slate-100',
        )}
        aria-busy={typing}
      >
        <MarkdownView text={text} final={done} />
      </div>
      {done && (
        <div className="mt-1 flex flex-wrap items-center gap-x-1 gap-y-0.5 pl-1">
          {stopped && (
            <span className="inline-flex items-center gap-1 px-1.5 py-1 text-xs font-medium text-slate-500 dark:text-slate-400">
              <Square className="h-3 w-3 fill-current" aria-hidden />
              Stopped
            </span>
          )}
          <CopyButton text={record.response} label="Copy answer" />
          {canRegenerate && (
            <button
              type="button"
              className={action}
              onClick={() => onRegenerate(record)}
              aria-label="Regenerate answer"
            >
              <RefreshCw className="h-3.5 w-3.5" aria-hidden />
              <span className="hidden sm:inline">Regenerate</span>
            </button>
          )}
          {showCosts && <CostLine record={record} />}
        </div>
      )}
    </div>
  )
})

/** Retry of a failed request (same id): 'Retry failed: {message}' when the server refuses. */
function RetryButton({ record, onRetried }: { record: RequestRecord; onRetried: () => void }) {
  const [retrying, setRetrying] = useState(false)
  const { toast } = useFeedback()
  const queryClient = useQueryClient()
  const retry = async () => {
    setRetrying(true)
    try {
      const result = await retryRequest(record.id)
      if (result.status !== 'success') throw new Error(result.message)
      onRetried()
      // The update event brings the pending record; a read covers an event missed meanwhile.
      const fresh = await pb.collection('requests').getOne<RequestRecord>(record.id)
      writeHistory(queryClient, record.conversation, fresh, 'update')
    } catch (err) {
      const message = errorMessage(err, '')
      toast(message ? `Retry failed: ${message}` : 'Retry failed. Please try again.', 'error')
    } finally {
      setRetrying(false)
    }
  }
  return (
    <button
      type="button"
      onClick={retry}
      disabled={retrying}
      className="focus-ring inline-flex items-center gap-1.5 rounded-lg border border-red-300 bg-white px-3 py-1.5 text-xs font-medium text-red-700 hover:bg-red-50 disabled:opacity-60 dark:border-red-800 dark:bg-red-950 dark:text-red-300 dark:hover:bg-red-900"
    >
      <RotateCcw className={cn('h-3.5 w-3.5', retrying && 'animate-spin')} aria-hidden />
      Retry
    </button>
  )
}

function ErrorBubble({
  title,
  detail,
  children,
}: {
  title: string
  detail?: string
  children?: ReactNode
}) {
  return (
    <div
      role="alert"
      className={cn(
        bubble,
        'border border-red-200 bg-red-50 text-red-800 dark:border-red-900/70 dark:bg-red-950/40 dark:text-red-200',
      )}
    >
      <p className="flex items-center gap-2 text-sm font-semibold">
        <AlertTriangle className="h-4 w-4 shrink-0" aria-hidden />
        {title}
      </p>
      {detail && <p className="mt-1 text-sm text-red-700 dark:text-red-300">{detail}</p>}
      {children}
    </div>
  )
}
