import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryRouter, RouterProvider, useLocation } from 'react-router'
import { AuthProvider } from '../../context/auth-context.tsx'
import { pb } from '../../lib/pb.ts'
import ApproveNodePage from './approve-node-page.tsx'

function LoginProbe() {
  const location = useLocation()
  return <p>login {new URLSearchParams(location.search).get('return')}</p>
}

function renderAt(path: string) {
  const router = createMemoryRouter(
    [
      { path: '/login', element: <LoginProbe /> },
      { path: '/auth/approve-node', element: <ApproveNodePage /> },
    ],
    { initialEntries: [path] },
  )
  render(
    <QueryClientProvider client={new QueryClient()}>
      <AuthProvider>
        <RouterProvider router={router} />
      </AuthProvider>
    </QueryClientProvider>,
  )
}

describe('ApproveNodePage', () => {
  afterEach(() => {
    cleanup()
    pb.authStore.clear()
  })

  it('without a token shows Invalid Request', () => {
    renderAt('/auth/approve-node?device=box')
    expect(screen.getByRole('heading', { name: 'Invalid Request' })).toBeTruthy()
    expect(screen.getByText('Missing authorization token. Please try the authentication process again.')).toBeTruthy()
    expect(screen.queryByRole('button', { name: 'Approve Connection' })).toBeNull()
  })

  it('signed out, sends to /login with the full address as return', async () => {
    renderAt('/auth/approve-node?token=abc&device=studio')
    const text = (await screen.findByText(/^login /)).textContent
    expect(text).toBe(`login ${window.location.origin}/auth/approve-node?token=abc&device=studio`)
  })
})
