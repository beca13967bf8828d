import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { cleanup, fireEvent, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryRouter, RouterProvider } from 'react-router'
import { AuthProvider } from '../../context/auth-context.tsx'
import LoginPage from './login-page.tsx'

function renderLogin() {
  const router = createMemoryRouter([{ path: '/login', element: <LoginPage /> }], {
    initialEntries: ['/login'],
  })
  render(
    <QueryClientProvider client={new QueryClient()}>
      <AuthProvider>
        <RouterProvider router={router} />
      </AuthProvider>
    </QueryClientProvider>,
  )
}

describe('LoginPage', () => {
  afterEach(cleanup)

  it('asks for both fields before calling the server', async () => {
    renderLogin()
    expect(await screen.findByRole('heading', { name: 'Sign in to your account' })).toBeTruthy()
    fireEvent.change(screen.getByLabelText('Email'), { target: { value: 'a@b.co' } })
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }))
    expect(screen.getByRole('alert').textContent).toBe('Please fill in all fields')
  })

  it('switches mode and clears the form and the error', async () => {
    renderLogin()
    await screen.findByText('Access your distributed AI dashboard')
    const email = screen.getByLabelText('Email') as HTMLInputElement
    fireEvent.change(email, { target: { value: 'a@b.co' } })
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }))
    expect(screen.queryByRole('alert')).not.toBeNull()

    fireEvent.click(screen.getByRole('button', { name: "Don't have an account? Create one" }))
    expect(screen.getByRole('heading', { name: 'Create your account' })).toBeTruthy()
    expect(screen.getByText('Join the distributed AI network')).toBeTruthy()
    expect(screen.getByRole('button', { name: 'Create account' })).toBeTruthy()
    expect((screen.getByLabelText('Email') as HTMLInputElement).value).toBe('')
    expect(screen.queryByRole('alert')).toBeNull()
    expect(screen.getByLabelText('Email').getAttribute('type')).toBe('email')

    fireEvent.click(screen.getByRole('button', { name: 'Already have an account? Sign in' }))
    expect(screen.getByRole('heading', { name: 'Sign in to your account' })).toBeTruthy()
  })
})
