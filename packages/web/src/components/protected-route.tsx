import { Navigate, Outlet, useLocation } from 'react-router'
import { useAuth } from '../context/auth-context.tsx'
import { Spinner } from './spinner.tsx'

/** Guards protected screens: spinner while auth loads, else /login carrying the origin location. */
export function ProtectedRoute() {
  const { status } = useAuth()
  const location = useLocation()
  if (status === 'loading')
    return <Spinner label="Verifying authentication..." className="min-h-[60vh]" />
  if (status === 'signed-out') return <Navigate to="/login" replace state={{ from: location }} />
  return <Outlet />
}
