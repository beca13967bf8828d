import { QueryClient } from '@tanstack/react-query'

function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status
  return typeof status === 'number' ? status : undefined
}

/** One QueryClient policy: client errors (4xx) are final, others get one retry. */
export function createQueryClient(): QueryClient {
  return new QueryClient({
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
