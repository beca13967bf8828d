import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
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
      { path: '/nodes', element: <p>nodes screen</p> },
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
    vi.restoreAllMocks()
    pb.authStore.clear()
  })

  const b64 = (o: object) => btoa(JSON.stringify(o)).replace(/=+$/, '')
  const validToken = `${b64({ alg: 'HS256' })}.${b64({ id: 'u1', exp: 4102444800 })}.sig`
  function signIn() {
    pb.authStore.save(validToken, {
      id: 'u1',
      email: 'ada@example.com',
      name: 'ada',
      credits: 7,
      collectionName: 'users',
    } as never)
    vi.spyOn(pb, 'collection').mockReturnValue({ authRefresh: () => Promise.resolve({}) } as never)
  }
  const reply = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } })

  it('shows the device name from the flow, not the URL; approve posts the state token and user info, then goes to /nodes', async () => {
    signIn()
    const fetchMock = vi
      .spyOn(globalThis, 'fetch')
      .mockImplementation(async (url) =>
        String(url).endsWith('/api/auth/flow-info')
          ? reply(200, { device_name: 'studio', expires_at: '2100-01-01T00:00:00.000Z' })
          : reply(200, { status: 'ok' }),
      )
    renderAt('/auth/approve-node?token=tok1&device=Your%20bank%20(official)')
    expect(await screen.findByText('studio')).toBeTruthy()
    expect(screen.queryByText('Your bank (official)')).toBeNull()
    expect(JSON.parse(String(fetchMock.mock.calls[0][1]?.body))).toEqual({ state_token: 'tok1' })
    fireEvent.click(screen.getByRole('button', { name: 'Approve Connection' }))
    expect(await screen.findByText('nodes screen')).toBeTruthy()
    const [url, init] = fetchMock.mock.calls[1]
    expect(String(url)).toMatch(/\/api\/auth\/complete-flow$/)
    expect(JSON.parse(String(init?.body))).toEqual({
      state_token: 'tok1',
      user_info: { id: 'u1', email: 'ada@example.com', name: 'ada', credits: 7 },
    })
  })

  it('deny posts the failure and shows the closing message; a failed approve shows the error', async () => {
    signIn()
    vi.spyOn(console, 'warn').mockImplementation(() => {})
    const fetchMock = vi
      .spyOn(globalThis, 'fetch')
      .mockResolvedValueOnce(reply(400, { message: 'Invalid or expired authorization token.' }))
      .mockResolvedValueOnce(reply(400, { message: 'expired' }))
    // A flow the coordinator cannot describe: the spec's default label, whatever the URL says.
    renderAt('/auth/approve-node?token=tok2&device=studio')
    expect(await screen.findByText('Unknown Device')).toBeTruthy()
    fireEvent.click(screen.getByRole('button', { name: 'Approve Connection' }))
    expect((await screen.findByRole('alert')).textContent).toBe(
      'Failed to approve connection. Please try again.',
    )
    fetchMock.mockResolvedValueOnce(reply(200, {}))
    fireEvent.click(screen.getByRole('button', { name: 'Deny' }))
    expect(await screen.findByText('Connection denied. You can close this window.')).toBeTruthy()
    expect(JSON.parse(String(fetchMock.mock.calls[2][1]?.body))).toEqual({
      state_token: 'tok2',
      status: 'failed',
      error: 'User denied authorization',
    })
  })

  it('without a token shows Invalid Request', () => {
    renderAt('/auth/approve-node?device=box')
    expect(screen.getByRole('heading', { name: 'Invalid Request' })).toBeTruthy()
    expect(
      screen.getByText('Missing authorization token. Please try the authentication process again.'),
    ).toBeTruthy()
    expect(screen.queryByRole('button', { name: 'Approve Connection' })).toBeNull()
  })

  it('signed out, sends to /login with the full address as return', async () => {
    renderAt('/auth/approve-node?token=abc&device=studio')
    const text = (await screen.findByText(/^login /)).textContent
    expect(text).toBe(`login ${window.location.origin}/auth/approve-node?token=abc&device=studio`)
  })
})
