import { AlertTriangle, RotateCcw } from 'lucide-react'
import type { ReactNode } from 'react'
import { lazy, memo, Suspense, useCallback, useEffect, useRef, useState } from 'react'
import { retryRequest } from '../../../lib/api.ts'
import { errorMessage } from '../../../lib/api-error.ts'
import { cn } from '../../../lib/cn.ts'
import { isTerminal, type RequestRecord } from '../chat-types.ts'
import { useRequestStream } from '../use-request-stream.ts'
import { useTypewriter } from '../use-typewriter.ts'

const MarkdownContent = lazy(() => import('./markdown-content.tsx'))

export interface AssistantReplyProps {
  requestId?: string
  /** The record from history, when it has been loaded. */
  record?: RequestRecord
  /** 'Error: {message}' when the send call itself failed. */
  sendError?: string
  /** True for replies started in this visit: they type out and stream. */
  live: boolean
  showCosts: boolean
  onSettled: () => void
}

const bubble = 'max-w-full rounded-2xl rounded-tl-md px-4 py-3'

/** One assistant turn: Thinking..., streamed markdown, cost, or a failure with Retry. */
export const AssistantReply = memo(function AssistantReply(props: AssistantReplyProps) {
  const { requestId, record, sendError, showCosts, onSettled } = props
  const [liveRecord, setLiveRecord] = useState<RequestRecord | null>(null)
  // Replies still streaming when history loaded type out as well; finished ones show at once.
  const [animate, setAnimate] = useState(props.live || (!!record && !isTerminal(record.status)))
  const [retrying, setRetrying] = useState(false)
  const settledRef = useRef(false)

  // The history record that was current when Retry succeeded: stale until history refetches.
  const [staleRecord, setStaleRecord] = useState<RequestRecord | null>(null)
  // A live record (stream or retry) wins over history until history catches up to a final state.
  const historyIsFinal = !!record && record !== staleRecord && isTerminal(record.status)
  const current = liveRecord && !(historyIsFinal && !isTerminal(liveRecord.status)) ? liveRecord : record
  const status = current?.status ?? 'pending'
  const streaming = !!requestId && !sendError && !isTerminal(status)

  const onRecord = useCallback((next: RequestRecord) => {
    setLiveRecord((prev) => (prev && isTerminal(prev.status) && !isTerminal(next.status) ? prev : next))
  }, [])
  useRequestStream(requestId, streaming, onRecord)

  useEffect(() => {
    if (!liveRecord || !isTerminal(liveRecord.status) || settledRef.current) return
    settledRef.current = true
    onSettled()
  }, [liveRecord, onSettled])

  const text = useTypewriter(current?.response ?? '', animate)

  if (sendError) {
    return <ErrorBubble title={sendError} />
  }

  if (status === 'failed' || status === 'cancelled') {
    const fromStream = animate
    const detail = current?.error_message || (fromStream ? 'An error occurred while processing your request' : 'Request failed')
    const retry = async () => {
      if (!requestId) return
      setRetrying(true)
      try {
        const result = await retryRequest(requestId)
        if (result.status !== 'success') throw new Error(result.message)
        settledRef.current = false
        setAnimate(true)
        if (record) setStaleRecord(record)
        setLiveRecord({ ...(current as RequestRecord), status: 'pending', response: '', error_message: '', is_partial: false })
      } catch (err) {
        const message = errorMessage(err, '')
        window.alert(message ? `Retry failed: ${message}` : 'Retry failed. Please try again.')
      } finally {
        setRetrying(false)
      }
    }
    return (
      <ErrorBubble title={fromStream ? 'Request failed - please try again' : 'Request Failed'} detail={detail}>
        {current?.can_retry && (
          <button
            type="button"
            onClick={retry}
            disabled={retrying}
            className="focus-ring mt-3 inline-flex items-center gap-1.5 rounded-lg border border-red-300 bg-white px-3 py-1.5 text-xs font-medium text-red-700 hover:bg-red-50 disabled:opacity-60 dark:border-red-800 dark:bg-red-950 dark:text-red-300 dark:hover:bg-red-900"
          >
            <RotateCcw className={cn('h-3.5 w-3.5', retrying && 'animate-spin')} aria-hidden />
            Retry
          </button>
        )}
      </ErrorBubble>
    )
  }

  if (!current?.response) {
    return (
      <div className={cn(bubble, 'bg-slate-100 dark:bg-slate-800/70')}>
        <span className="inline-flex items-center gap-2 text-sm text-slate-500 dark:text-slate-400">
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

  const typing = text.length < current.response.length || (current.is_partial && streaming)
  const cost = (current.tokens_input ?? 0) + (current.tokens_output ?? 0)
  return (
    <div className={cn(bubble, 'bg-slate-100 text-slate-900 dark:bg-slate-800/70 dark:text-slate-100')} aria-busy={typing}>
      <Suspense fallback={<p className="text-[0.9375rem] leading-7 whitespace-pre-wrap">{text}</p>}>
        <MarkdownContent text={text} />
      </Suspense>
      {showCosts && status === 'completed' && !typing && (
        <p className="mt-2 text-xs text-slate-600 dark:text-slate-400">Cost: {cost} tokens</p>
      )}
    </div>
  )
})

function ErrorBubble({ title, detail, children }: { title: string; detail?: string; children?: ReactNode }) {
  return (
    <div
      role="alert"
      className={cn(bubble, 'border border-red-200 bg-red-50 text-red-800 dark:border-red-900/70 dark:bg-red-950/40 dark:text-red-200')}
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
