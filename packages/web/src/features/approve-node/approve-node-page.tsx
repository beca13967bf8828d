import { AlertTriangle, XCircle } from 'lucide-react'
import { useEffect, useState } from 'react'
import { useLocation, useNavigate, useSearchParams } from 'react-router'
import { Button } from '../../components/button.tsx'
import { Spinner } from '../../components/spinner.tsx'
import { useAuth } from '../../context/auth-context.tsx'
import { loginUrlWithReturn } from '../../lib/return-url.ts'
import { useApproveNode, useDenyNode, useFlowDevice } from './approve-node-api.ts'
import {
  APPROVE_FAILED,
  DEFAULT_DEVICE,
  DENIED,
  DENY_FAILED,
  PERMISSIONS,
} from './approve-node-copy.ts'
import { ApproveCard, NodeGrant } from './components/approve-card.tsx'

/** Node authorization (spec §2): approve or deny a node's link to this account. */
export default function ApproveNodePage() {
  const [params] = useSearchParams()
  const token = params.get('token') ?? ''
  const { status, user } = useAuth()
  const flow = useFlowDevice(token, status === 'signed-in')
  // From the coordinator's record of the flow; the URL's `device` parameter is never shown.
  const device = flow.data?.device_name || DEFAULT_DEVICE
  const location = useLocation()
  const navigate = useNavigate()
  const approve = useApproveNode()
  const deny = useDenyNode()
  const [error, setError] = useState('')
  const [denied, setDenied] = useState(false)

  useEffect(() => {
    // Not wrapped in the guard: the return parameter must hold the full address (token included).
    if (token && status === 'signed-out') {
      const full = `${window.location.origin}${location.pathname}${location.search}${location.hash}`
      void navigate(loginUrlWithReturn(full), { replace: true })
    }
  }, [token, status, location, navigate])

  if (!token) {
    return (
      <ApproveCard
        title="Invalid Request"
        icon={<AlertTriangle className="h-7 w-7 text-amber-600" aria-hidden />}
      >
        <p className="text-center text-sm text-slate-600 dark:text-slate-300">
          Missing authorization token. Please try the authentication process again.
        </p>
      </ApproveCard>
    )
  }
  if (status !== 'signed-in' || !user || flow.isPending)
    return <Spinner label="Checking authentication..." className="min-h-[60vh]" />
  if (denied) {
    return (
      <ApproveCard
        title="Authorize Node Connection"
        icon={<XCircle className="h-7 w-7 text-red-600" aria-hidden />}
      >
        <p className="text-center text-sm text-slate-600 dark:text-slate-300">{DENIED}</p>
      </ApproveCard>
    )
  }

  const busy = approve.isPending || deny.isPending
  const onApprove = () => {
    setError('')
    approve.mutate(
      { token, user },
      {
        onSuccess: () => void navigate('/nodes'),
        onError: (err) => {
          console.warn('Failed to complete authorization', err)
          setError(APPROVE_FAILED)
        },
      },
    )
  }
  const onDeny = () => {
    setError('')
    deny.mutate(token, {
      onSuccess: () => setDenied(true),
      onError: (err) => {
        console.warn('Failed to deny authorization', err)
        setError(DENY_FAILED)
      },
    })
  }

  return (
    <ApproveCard title="Authorize Node Connection">
      <p className="mb-5 text-center text-sm text-slate-600 dark:text-slate-300">
        A node wants to connect to your account <span className="font-medium">{user.email}</span>.
      </p>
      <NodeGrant device={device} permissions={PERMISSIONS} />
      {error && (
        <p
          role="alert"
          className="mb-4 rounded-lg border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-700 dark:border-red-500/30 dark:bg-red-500/10 dark:text-red-300"
        >
          {error}
        </p>
      )}
      <div className="flex flex-col-reverse gap-2 sm:flex-row">
        <Button
          variant="outline"
          className="w-full sm:w-auto sm:flex-1"
          disabled={busy}
          onClick={onDeny}
        >
          Deny
        </Button>
        <Button className="w-full sm:w-auto sm:flex-1" disabled={busy} onClick={onApprove}>
          {approve.isPending ? 'Approving...' : 'Approve Connection'}
        </Button>
      </div>
    </ApproveCard>
  )
}
