import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { useAuth } from '../../context/auth-context.tsx'
import { NotAuthenticatedError } from '../../hooks/use-balance.ts'
import { pb } from '../../lib/pb.ts'
import type { TransactionRecord } from './transaction-display.ts'

/** Transactions page size (spec §9). */
export const TRANSACTIONS_PER_PAGE = 50

/** One page of the user's credit transactions, newest first, with the request's model and API key. */
export function useTransactions(page: number) {
  const { user } = useAuth()
  return useQuery({
    queryKey: ['user_credit_txs', user?.id ?? '', page],
    enabled: !!user,
    placeholderData: keepPreviousData,
    queryFn: async () => {
      if (!user) throw new NotAuthenticatedError()
      return pb
        .collection('user_credit_txs')
        .getList<TransactionRecord>(page, TRANSACTIONS_PER_PAGE, {
          sort: '-created',
          filter: pb.filter('user = {:user}', { user: user.id }),
          expand: 'request.model,request.api_key',
        })
    },
  })
}
