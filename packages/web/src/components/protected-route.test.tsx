import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createMemoryRouter, RouterProvider, useLocation } from 'react-router'
import { AuthProvider } from '../context/auth-context.tsx'
import { pb } from '../lib/pb.ts'
import { ProtectedRoute } from './protected-route.tsx'

function LoginProbe() {
  const location = useLocation()
  const from = (location.state as { from?: { pathname: string } } | null)?.from?.pathname
  return <p>login page, from {from}</p>
}

function renderAt(path: string) {
  const router = createMemoryRouter(
    [
      { path: '/login', element: <LoginProbe /> },
      { element: <ProtectedRoute />, children: [{ path: '/nodes', element: <p>nodes screen</p> }] },
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

const b64 = (o: object) => btoa(JSON.stringify(o)).replace(/=+$/, '')
const validToken = `${b64({ alg: 'HS256' })}.${b64({ id: 'u1', exp: 4102444800 })}.sig`

describe('ProtectedRoute', () => {
  afterEach(() => {
    cleanup()
    vi.restoreAllMocks()
    pb.authStore.clear()
  })

  it('redirects to /login carrying the origin when signed out', async () => {
    renderAt('/nodes')
    expect(await screen.findByText('login page, from /nodes')).toBeTruthy()
  })

  it('shows the verifying spinner while the session refresh runs, then the screen', async () => {
    pb.authStore.save(validToken, { id: 'u1', email: 'a@b.co', collectionName: 'users' } as never)
    let finish: (v: unknown) => void = () => {}
    vi.spyOn(pb, 'collection').mockReturnValue({
      authRefresh: () => new Promise((resolve) => (finish = resolve)),
    } as never)
    renderAt('/nodes')
    expect(await screen.findByText('Verifying authentication...')).toBeTruthy()
    finish({})
    expect(await screen.findByText('nodes screen')).toBeTruthy()
  })

  it('logs out when the refresh fails', async () => {
    pb.authStore.save(validToken, { id: 'u1', email: 'a@b.co', collectionName: 'users' } as never)
    vi.spyOn(console, 'warn').mockImplementation(() => {})
    vi.spyOn(pb, 'collection').mockReturnValue({
      authRefresh: () => Promise.reject(new Error('expired')),
    } as never)
    renderAt('/nodes')
    expect(await screen.findByText('login page, from /nodes')).toBeTruthy()
    expect(pb.authStore.isValid).toBe(false)
  })
})
