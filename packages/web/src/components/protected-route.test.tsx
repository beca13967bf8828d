import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createMemoryRouter, RouterProvider, useLocation } from 'react-router'
import { AuthProvider, startSessionRefresh } from '../context/auth-context.tsx'
import { putBoot } from '../lib/boot-results.ts'
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

  it("takes the refresh boot.ts started: the answer's session is saved and the screen shows", async () => {
    pb.authStore.save(validToken, { id: 'u1', email: 'a@b.co', collectionName: 'users' } as never)
    const refresh = vi.fn()
    vi.spyOn(pb, 'collection').mockReturnValue({ authRefresh: refresh } as never)
    const renewed = `${b64({ alg: 'HS256' })}.${b64({ id: 'u1', exp: 4102444801 })}.sig`
    putBoot(
      'auth-refresh',
      Promise.resolve({
        ok: true,
        status: 200,
        body: { token: renewed, record: { id: 'u1', email: 'a@b.co' } },
      }),
    )
    startSessionRefresh()
    renderAt('/nodes')
    expect(await screen.findByText('nodes screen')).toBeTruthy()
    expect(pb.authStore.token).toBe(renewed)
    expect(refresh).not.toHaveBeenCalled()
  })

  it('logs out when the refresh boot.ts started was refused', async () => {
    pb.authStore.save(validToken, { id: 'u1', email: 'a@b.co', collectionName: 'users' } as never)
    vi.spyOn(console, 'warn').mockImplementation(() => {})
    putBoot(
      'auth-refresh',
      Promise.resolve({
        ok: false,
        status: 401,
        body: { message: 'The request requires valid record authorization token.' },
      }),
    )
    startSessionRefresh()
    renderAt('/nodes')
    expect(await screen.findByText('login page, from /nodes')).toBeTruthy()
    expect(pb.authStore.isValid).toBe(false)
  })
})
