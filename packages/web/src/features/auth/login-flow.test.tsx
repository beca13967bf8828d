import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { cleanup, fireEvent, render, screen } from '@testing-library/react'
import { ClientResponseError } from 'pocketbase'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createMemoryRouter, RouterProvider } from 'react-router'
import { AuthProvider } from '../../context/auth-context.tsx'
import { pb } from '../../lib/pb.ts'
import LoginPage from './login-page.tsx'

const b64 = (o: object) => btoa(JSON.stringify(o)).replace(/=+$/, '')
const token = `${b64({ alg: 'HS256' })}.${b64({ id: 'u1', exp: 4102444800 })}.sig`

function renderAt(entry: string) {
  const router = createMemoryRouter(
    [
      { path: '/login', element: <LoginPage /> },
      { path: '*', element: <p>landed</p> },
    ],
    { initialEntries: [entry] },
  )
  render(
    <QueryClientProvider client={new QueryClient()}>
      <AuthProvider>
        <RouterProvider router={router} />
      </AuthProvider>
    </QueryClientProvider>,
  )
  return router
}

function fill(email: string, password: string) {
  fireEvent.change(screen.getByLabelText('Email'), { target: { value: email } })
  fireEvent.change(screen.getByLabelText('Password'), { target: { value: password } })
}

describe('login flow', () => {
  afterEach(() => {
    cleanup()
    vi.restoreAllMocks()
    pb.authStore.clear()
  })

  it('signs in and goes to the decoded return target', async () => {
    const auth = vi.fn(async () => {
      pb.authStore.save(token, { id: 'u1', email: 'a@b.co', collectionName: 'users' } as never)
      return {}
    })
    vi.spyOn(pb, 'collection').mockReturnValue({ authWithPassword: auth } as never)
    const router = renderAt(
      `/login?return=${encodeURIComponent('http://x/auth/approve-node?token=t1')}`,
    )
    fill('a@b.co', 'secret')
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }))
    expect(await screen.findByText('landed')).toBeTruthy()
    expect(auth).toHaveBeenCalledWith('a@b.co', 'secret')
    expect(router.state.location.pathname + router.state.location.search).toBe(
      '/auth/approve-node?token=t1',
    )
  })

  it('shows the server message when sign-in fails, else Login failed', async () => {
    vi.spyOn(pb, 'collection').mockReturnValue({
      authWithPassword: vi
        .fn()
        .mockRejectedValueOnce({ response: { message: 'Failed to authenticate.' } })
        .mockRejectedValueOnce({}),
    } as never)
    renderAt('/login')
    fill('a@b.co', 'bad')
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }))
    expect((await screen.findByRole('alert')).textContent).toBe('Failed to authenticate.')
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }))
    expect(await screen.findByText('Login failed')).toBeTruthy()
  })

  it('registers with the password as its own confirmation, then reports a failed auto-login', async () => {
    const create = vi.fn(async () => ({}))
    vi.spyOn(pb, 'collection').mockReturnValue({
      create,
      authWithPassword: vi.fn().mockRejectedValue(new Error('nope')),
    } as never)
    renderAt('/login')
    fireEvent.click(screen.getByRole('button', { name: "Don't have an account? Create one" }))
    fill('new@b.co', 'pw12345678')
    fireEvent.click(screen.getByRole('button', { name: 'Create account' }))
    expect(await screen.findByText('Registration succeeded but login failed')).toBeTruthy()
    expect(create).toHaveBeenCalledWith({
      email: 'new@b.co',
      password: 'pw12345678',
      passwordConfirm: 'pw12345678',
      name: 'new',
    })
  })

  it("falls back to 'Registration failed'", async () => {
    vi.spyOn(pb, 'collection').mockReturnValue({ create: vi.fn().mockRejectedValue({}) } as never)
    renderAt('/login')
    fireEvent.click(screen.getByRole('button', { name: "Don't have an account? Create one" }))
    fill('new@b.co', 'pw12345678')
    fireEvent.click(screen.getByRole('button', { name: 'Create account' }))
    expect(await screen.findByText('Registration failed')).toBeTruthy()
  })

  it("shows the server's reasons instead of 'Failed to create record.'", async () => {
    vi.spyOn(pb, 'collection').mockReturnValue({
      create: vi.fn().mockRejectedValue(
        new ClientResponseError({
          status: 400,
          response: {
            message: 'Failed to create record.',
            data: {
              password: {
                code: 'validation_min_text_constraint',
                message: 'Must be at least 8 character(s).',
              },
            },
          },
        }),
      ),
    } as never)
    renderAt('/login')
    fireEvent.click(screen.getByRole('button', { name: "Don't have an account? Create one" }))
    fill('new@b.co', 'short')
    fireEvent.click(screen.getByRole('button', { name: 'Create account' }))
    expect((await screen.findByRole('alert')).textContent).toBe(
      'Password: Must be at least 8 character(s).',
    )
  })

  it('says the server cannot be reached when it cannot', async () => {
    vi.spyOn(pb, 'collection').mockReturnValue({
      authWithPassword: vi
        .fn()
        .mockRejectedValue(
          new ClientResponseError({ status: 0, originalError: new TypeError('Failed to fetch') }),
        ),
    } as never)
    renderAt('/login')
    fill('a@b.co', 'secret123')
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }))
    expect((await screen.findByRole('alert')).textContent).toBe(
      'Cannot reach the Meshwork server. Check your connection and try again.',
    )
  })
})
