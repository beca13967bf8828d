/**
 * @module The signed-in user's API keys (issue 10) through `/api/keys`: list, create (the secret
 * comes back once) and revoke. The SDK's `send` carries the session token and raises its errors.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useAuth } from '../../context/auth-context.tsx'
import { pb } from '../../lib/pb.ts'

export interface ApiKey {
  id: string
  name: string
  hint: string
  created: string
  last_used: string
  /** Credits the key may spend in all; 0: no limit. */
  spend_limit: number
  spent: number
}

export interface CreatedApiKey extends ApiKey {
  /** The secret: shown once. */
  key: string
}

export interface NewApiKey {
  name: string
  spend_limit?: number
}

const keysQuery = (userId: string) => ['api_keys', userId]

export function useApiKeys() {
  const { user } = useAuth()
  return useQuery({
    queryKey: keysQuery(user?.id ?? ''),
    enabled: !!user,
    queryFn: () => pb.send<ApiKey[]>('/api/keys', { method: 'GET' }),
  })
}

export function useCreateApiKey() {
  const { user } = useAuth()
  const client = useQueryClient()
  return useMutation({
    mutationFn: (body: NewApiKey) => pb.send<CreatedApiKey>('/api/keys', { method: 'POST', body }),
    onSuccess: () => client.invalidateQueries({ queryKey: keysQuery(user?.id ?? '') }),
  })
}

export function useRevokeApiKey() {
  const { user } = useAuth()
  const client = useQueryClient()
  return useMutation({
    mutationFn: (id: string) =>
      pb.send(`/api/keys/${encodeURIComponent(id)}`, { method: 'DELETE' }),
    onSuccess: () => client.invalidateQueries({ queryKey: keysQuery(user?.id ?? '') }),
  })
}
