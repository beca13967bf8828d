import type { UserBalanceRecord } from '@meshwork/protocol/records'
import { useQuery } from '@tanstack/react-query'
import { useAuth } from '../context/auth-context.tsx'
import { pb } from '../lib/pb.ts'

/** The balance figures of the user's `user_balances` record (spendable = balance - held). */
export type Balance = Pick<
  UserBalanceRecord,
  'balance' | 'held' | 'total_earned' | 'pending_earnings' | 'total_spent'
>

export class NotAuthenticatedError extends Error {
  constructor() {
    super('User not authenticated')
    this.name = 'NotAuthenticatedError'
  }
}

/** Reads the signed-in user's balance record (zeros when none exists). */
export async function fetchBalance(userId: string | undefined): Promise<Balance> {
  if (!userId) throw new NotAuthenticatedError()
  const list = await pb.collection('user_balances').getList<UserBalanceRecord>(1, 1, {
    filter: pb.filter('user = {:user}', { user: userId }),
  })
  const record = list.items[0]
  return {
    balance: record?.balance ?? 0,
    held: record?.held ?? 0,
    total_earned: record?.total_earned ?? 0,
    pending_earnings: record?.pending_earnings ?? 0,
    total_spent: record?.total_spent ?? 0,
  }
}

/** The balance, refreshed every 10 s while signed in (spec §7). */
export function useBalance() {
  const { user } = useAuth()
  return useQuery({
    queryKey: ['user_balances', user?.id ?? ''],
    enabled: !!user,
    refetchInterval: 10_000,
    queryFn: () => fetchBalance(user?.id),
  })
}
