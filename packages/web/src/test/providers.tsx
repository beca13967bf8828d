/** Test wrapper: the providers a chat component needs (query cache, in-app dialogs and toasts). */
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import type { ReactNode } from 'react'
import { FeedbackProvider } from '../components/feedback/feedback-context.tsx'

export function withProviders(node: ReactNode, queryClient = new QueryClient()) {
  return (
    <QueryClientProvider client={queryClient}>
      <FeedbackProvider>{node}</FeedbackProvider>
    </QueryClientProvider>
  )
}
