/** @module The approve and deny calls of spec §7, as mutations, and the flow's device name. */
import { useMutation, useQuery } from '@tanstack/react-query'
import { approveNode, denyNode, getFlowInfo } from '../../lib/api.ts'
import { ApiError } from '../../lib/api-error.ts'
import type { CurrentUser } from '../../lib/pb.ts'
import { MISSING_TOKEN } from './approve-node-copy.ts'

export function useApproveNode() {
  return useMutation({
    mutationFn: ({ token, user }: { token: string; user: CurrentUser }) => {
      if (!token) throw new ApiError(400, MISSING_TOKEN)
      return approveNode(token, {
        id: user.id,
        email: user.email,
        name: user.name,
        credits: user.credits,
      })
    },
  })
}

export function useDenyNode() {
  return useMutation({
    mutationFn: (token: string) => {
      if (!token) throw new ApiError(400, MISSING_TOKEN)
      return denyNode(token)
    },
  })
}

/**
 * The device name the node sent when it started the flow. The approve URL's `device` parameter is
 * not shown: anyone can write any name into a link they send someone.
 */
export function useFlowDevice(token: string, enabled: boolean) {
  return useQuery({
    queryKey: ['flow-info', token],
    queryFn: () => getFlowInfo(token),
    enabled: enabled && !!token,
    retry: false,
    staleTime: Infinity,
  })
}
