import { QueryCache, QueryClient } from '@tanstack/react-query'
import { pb } from './pb.ts'

function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status
  return typeof status === 'number' ? status : undefined
}

/**
 * One QueryClient policy: client errors (4xx) are final, others get one retry. A 401 means the
 * stored session is no longer accepted, so it is cleared and the guards send the user to /login.
 */
export function createQueryClient(): QueryClient {
  return new QueryClient({
    queryCache: new QueryCache({
      onError: (err) => {
        if (statusOf(err) === 401 && pb.authStore.isValid) pb.authStore.clear()
      },
    }),
    defaultOptions: {
      queries: {
        retry: (failureCount, err) => {
          const status = statusOf(err)
          if (status !== undefined && status >= 400 && status < 500) return false
          return failureCount < 1
        },
        staleTime: 2_000,
      },
    },
  })
}
