/**
 * @module Sending and regenerating from the chat screen: the spec's checks (a conversation, an
 * available model) as in-app messages, the user's message shown at once, and the composer's text
 * given back when the send fails, so nothing typed is lost. A failed send may still have landed
 * (its answer lost on the way): the same text sent again to the same conversation goes under the
 * same idempotency key, so the server answers the stored request instead of charging it twice.
 */
import { useQueryClient, type QueryClient } from '@tanstack/react-query'
import { useCallback, useRef, useState } from 'react'
import { useFeedback } from '../../components/feedback/feedback-context.tsx'
import { regenerateAnswer, sendChat } from '../../lib/api.ts'
import { errorMessage } from '../../lib/api-error.ts'
import { newRecordId } from '../../lib/record-id.ts'
import { pb } from '../../lib/pb.ts'
import type { ChatModel, RequestRecord } from './chat-types.ts'
import { modelsQuery } from './conversations-api.ts'
import { writeHistory } from './history-api.ts'
import type { PendingSend } from './use-chat-items.ts'

export const NO_CONVERSATION = 'Please select a conversation or create a new one first.'
export const unavailableText = (model: string) =>
  `${model} is currently unavailable. No nodes are online for this model. Please select a different model or try again later.`

export interface SendContext {
  conversationId: string | null
  model: ChatModel | null
  temperature: number
  /** Ids of the records shown now (to recognise the send's own record when it arrives). */
  knownIds: () => ReadonlySet<string>
  add: (send: PendingSend) => void
  patch: (key: string, change: Partial<PendingSend>) => void
  /** Auto-scroll turns on again when a message is sent (spec §2). */
  follow: () => void
}

/**
 * Whether the server lists the model as served right now. The page's list is read every 3 s, so
 * a model a node started serving a moment ago can still show as unavailable: it is asked again
 * before a send is refused (a newcomer typing as soon as the demo model comes up).
 */
async function availableNow(queryClient: QueryClient, modelId: string): Promise<boolean> {
  try {
    const models = await queryClient.fetchQuery({ ...modelsQuery, staleTime: 0 })
    return models.some((m) => m.id === modelId && m.isAvailable)
  } catch {
    return false
  }
}

let sendCounter = 0
const newKey = (kind: string) => `${kind}-${Date.now().toString(36)}-${++sendCounter}`

export function useSendMessage(ctx: SendContext) {
  const queryClient = useQueryClient()
  const { toast } = useFeedback()
  const [sending, setSending] = useState(false)
  /** The last send that failed: whether it landed is not known. */
  const failed = useRef<{
    key: string
    conversationId: string
    prompt: string
    idempotencyKey: string
  }>(null)

  /** Reads the new request once: its events may have gone out before the page listened. */
  const readOnce = useCallback(
    (conversationId: string, id: string) =>
      pb
        .collection('requests')
        .getOne<RequestRecord>(id)
        .then((r) => writeHistory(queryClient, conversationId, r, 'create'))
        .catch((err: unknown) => console.warn('Could not read the new request', err)),
    [queryClient],
  )

  /**
   * Sends `draft`. `setDraft` empties the composer at once and, when the send fails, puts the
   * text back unless something new has been typed meanwhile.
   */
  const send = async (draft: string, setDraft: (update: (current: string) => string) => void) => {
    const prompt = draft.trim()
    const { conversationId, model } = ctx
    if (!prompt || sending) return
    if (!conversationId) return toast(NO_CONVERSATION, 'info')
    if (model && !model.isAvailable) {
      setSending(true)
      const served = await availableNow(queryClient, model.id)
      setSending(false)
      if (!served) return toast(unavailableText(model.name), 'error')
    }
    ctx.follow()
    setDraft(() => '')
    setSending(true)
    const again = failed.current
    const retry = again?.conversationId === conversationId && again.prompt === prompt ? again : null
    const key = retry?.key ?? newKey('send')
    const idempotencyKey = retry?.idempotencyKey ?? newRecordId()
    failed.current = null
    // Sent again: its error bubble waits for the answer once more.
    if (retry) ctx.patch(key, { sendError: undefined })
    else ctx.add({ key, conversationId, prompt, known: ctx.knownIds() })
    try {
      const result = await sendChat({
        conversation_id: conversationId,
        model_id: model?.id ?? '',
        prompt,
        temperature: ctx.temperature,
        idempotency_key: idempotencyKey,
      })
      ctx.patch(key, { requestId: result.request_id })
      void readOnce(conversationId, result.request_id)
      void queryClient.invalidateQueries({ queryKey: ['user_balances'] })
    } catch (err) {
      failed.current = { key, conversationId, prompt, idempotencyKey }
      ctx.patch(key, { sendError: `Error: ${errorMessage(err, 'Unknown error')}` })
      setDraft((current) => (current.trim() ? current : draft))
    } finally {
      setSending(false)
    }
  }

  /** A new answer to the last message; the old one leaves the list when the new one is in. */
  const regenerate = useCallback(
    async (record: RequestRecord) => {
      const conversationId = record.conversation
      try {
        const result = await regenerateAnswer(record.id)
        ctx.follow()
        ctx.add({
          key: newKey('regen'),
          conversationId,
          prompt: record.prompt,
          requestId: result.request_id,
          known: new Set(),
        })
        writeHistory(
          queryClient,
          conversationId,
          { ...record, replaced_by: result.request_id },
          'update',
        )
        void readOnce(conversationId, result.request_id)
        void queryClient.invalidateQueries({ queryKey: ['user_balances'] })
      } catch (err) {
        toast(`Regenerate failed: ${errorMessage(err, 'Please try again.')}`, 'error')
      }
    },
    // ctx's callbacks are stable; its values are read at call time.
    [queryClient, readOnce, toast, ctx.add, ctx.follow],
  )

  return { send, regenerate, sending }
}
