import { Navigate, useSearchParams } from 'react-router'
import { Card } from '../../components/card.tsx'
import { PageContainer, PageHeader } from '../../components/page-header.tsx'
import { useAuth } from '../../context/auth-context.tsx'
import { useBalance } from '../../hooks/use-balance.ts'
import { ApiKeysCard } from './components/api-keys-card.tsx'
import { BalanceCard } from './components/balance-card.tsx'
import { TransactionTable } from './components/transaction-table.tsx'
import { useTransactions } from './profile-api.ts'

/** Account information, token balance and paged transaction history (spec §2). */
export default function ProfilePage() {
  const { status, user } = useAuth()
  const [searchParams, setSearchParams] = useSearchParams()
  const page = Math.max(1, Number.parseInt(searchParams.get('page') ?? '1', 10) || 1)
  const balance = useBalance()
  const transactions = useTransactions(page)

  if (status === 'signed-out') return <Navigate to="/login" replace />

  return (
    <PageContainer>
      <PageHeader title="Profile" />
      <div className="space-y-6">
        <Card className="p-5 sm:p-6">
          <h2 className="mb-4 text-base font-semibold text-slate-900 dark:text-white">
            Account Information
          </h2>
          <dl className="grid gap-4 sm:grid-cols-2">
            <div>
              <dt className="text-sm text-slate-500 dark:text-slate-400">Email</dt>
              <dd className="mt-1 font-medium break-all text-slate-900 dark:text-white">
                {user?.email}
              </dd>
            </div>
            {user?.name && (
              <div>
                <dt className="text-sm text-slate-500 dark:text-slate-400">Name</dt>
                <dd className="mt-1 font-medium text-slate-900 dark:text-white">{user.name}</dd>
              </div>
            )}
          </dl>
        </Card>
        <BalanceCard balance={balance.data} loading={balance.isLoading} />
        <ApiKeysCard />
        <TransactionTable
          items={transactions.data?.items ?? []}
          loading={transactions.isLoading}
          page={page}
          totalPages={transactions.data?.totalPages ?? 1}
          onPage={(next) => setSearchParams(next > 1 ? { page: String(next) } : {})}
        />
      </div>
    </PageContainer>
  )
}
