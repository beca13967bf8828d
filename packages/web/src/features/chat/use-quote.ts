import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { useEffect, useState } from 'react'
import { quoteMessage, type QuoteResult } from '../../lib/api.ts'

const QUOTE_DELAY_MS = 350

/**
 * The most the message being typed can cost, asked of the server (which builds the same prompt
 * a send would) once typing pauses. Undefined while nothing is typed or the answer is pending.
 */
export function useQuote(
  draft: string,
  conversationId: string | null,
  modelId: string | undefined,
): QuoteResult | undefined {
  const prompt = draft.trim()
  const [settled, setSettled] = useState(prompt)
  useEffect(() => {
    const timer = setTimeout(() => setSettled(prompt), QUOTE_DELAY_MS)
    return () => clearTimeout(timer)
  }, [prompt])
  const { data } = useQuery({
    queryKey: ['quote', conversationId, modelId, settled],
    enabled: !!settled && !!modelId,
    staleTime: 10_000,
    retry: false,
    placeholderData: keepPreviousData,
    queryFn: () =>
      quoteMessage({
        conversation_id: conversationId ?? undefined,
        model_id: modelId!,
        prompt: settled,
      }),
  })
  return prompt ? data : undefined
}
