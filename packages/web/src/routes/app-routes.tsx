/**
 * @module The route table of spec §2. Screens are lazy so that first visit loads only the shell
 * and the screen asked for (markdown and charts stay out of the first bundle).
 */
import { lazy, Suspense } from 'react'
import type { ReactNode } from 'react'
import { Navigate, type RouteObject } from 'react-router'
import { AppShell } from '../components/layout/app-shell.tsx'
import { ProtectedRoute } from '../components/protected-route.tsx'
import { Spinner } from '../components/spinner.tsx'

const LoginPage = lazy(() => import('../features/auth/login-page.tsx'))
const ChatPage = lazy(() => import('../features/chat/chat-page.tsx'))
const NodesPage = lazy(() => import('../features/nodes/nodes-page.tsx'))
const NodeSetupPage = lazy(() => import('../features/node-setup/node-setup-page.tsx'))
const NetworkPage = lazy(() => import('../features/network/network-page.tsx'))
const ProfilePage = lazy(() => import('../features/profile/profile-page.tsx'))
const ApproveNodePage = lazy(() => import('../features/approve-node/approve-node-page.tsx'))

function page(node: ReactNode) {
  return <Suspense fallback={<Spinner className="min-h-[60vh]" />}>{node}</Suspense>
}

export const appRoutes: RouteObject[] = [
  { path: '/login', element: page(<LoginPage />) },
  {
    element: <AppShell />,
    children: [
      { index: true, element: <Navigate to="/chat" replace /> },
      { path: '/auth/approve-node', element: page(<ApproveNodePage />) },
      {
        element: <ProtectedRoute />,
        children: [
          { path: '/chat', element: page(<ChatPage />) },
          { path: '/nodes', element: page(<NodesPage />) },
          { path: '/nodes/setup', element: page(<NodeSetupPage />) },
          { path: '/network', element: page(<NetworkPage />) },
          { path: '/profile', element: page(<ProfilePage />) },
        ],
      },
      { path: '*', element: <Navigate to="/chat" replace /> },
    ],
  },
]
