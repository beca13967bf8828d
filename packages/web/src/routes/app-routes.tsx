/**
 * @module The route table of spec §2. Screens load lazily, so that a first visit loads only the
 * shell and the screen asked for (markdown and charts stay out of the first bundle).
 *
 * Screens use the router's `lazy` rather than React.lazy: the router starts loading the screen
 * at once (in parallel with the session refresh) and renders it when it is there. A Suspense
 * fallback would instead hold the finished screen back for React's reveal throttle (~300 ms).
 */
import type { QueryClient } from '@tanstack/react-query'
import type { ComponentType } from 'react'
import { Navigate, type RouteObject } from 'react-router'
import { AppShell } from '../components/layout/app-shell.tsx'
import { ProtectedRoute } from '../components/protected-route.tsx'
import { prefetchChat } from '../features/chat/chat-prefetch.ts'

/** A route's `lazy` for a module whose default export is the screen. */
function screen(load: () => Promise<{ default: ComponentType }>): RouteObject['lazy'] {
  return async () => ({ Component: (await load()).default })
}

export const createAppRoutes = (queryClient: QueryClient): RouteObject[] => [
  {
    path: '/login',
    HydrateFallback: () => null,
    lazy: screen(() => import('../features/auth/login-page.tsx')),
  },
  {
    element: <AppShell />,
    // Nothing to show until the first screen's code is in (a few milliseconds from the server).
    HydrateFallback: () => null,
    children: [
      { index: true, element: <Navigate to="/chat" replace /> },
      {
        path: '/auth/approve-node',
        lazy: screen(() => import('../features/approve-node/approve-node-page.tsx')),
      },
      {
        element: <ProtectedRoute />,
        children: [
          {
            path: '/chat',
            // Starts the screen's data while its code loads; returns at once (nothing to wait for).
            loader: ({ request }) => {
              prefetchChat(queryClient, new URL(request.url))
              return null
            },
            lazy: screen(() => import('../features/chat/chat-page.tsx')),
          },
          { path: '/nodes', lazy: screen(() => import('../features/nodes/nodes-page.tsx')) },
          {
            path: '/nodes/setup',
            lazy: screen(() => import('../features/node-setup/node-setup-page.tsx')),
          },
          { path: '/network', lazy: screen(() => import('../features/network/network-page.tsx')) },
          { path: '/profile', lazy: screen(() => import('../features/profile/profile-page.tsx')) },
        ],
      },
      { path: '*', element: <Navigate to="/chat" replace /> },
    ],
  },
]
