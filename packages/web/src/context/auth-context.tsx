/**
 * @module Authentication state (spec §4): loading, then signed-in or signed-out.
 * A stored valid session is restored at start and refreshed; a failed refresh logs out.
 */
import { createContext, useCallback, useContext, useEffect, useMemo, useState } from 'react'
import type { ReactNode } from 'react'
import { useQueryClient } from '@tanstack/react-query'
import { errorMessage } from '../lib/api-error.ts'
import { pb, toCurrentUser, type CurrentUser } from '../lib/pb.ts'

export type AuthStatus = 'loading' | 'signed-in' | 'signed-out'

export interface AuthContextValue {
  status: AuthStatus
  user: CurrentUser | null
  login: (email: string, password: string) => Promise<void>
  register: (email: string, password: string) => Promise<void>
  logout: () => void
}

/** Raised when registration worked but the automatic sign-in that follows did not. */
export class RegisteredButLoginFailedError extends Error {
  constructor(cause: unknown) {
    super('Registration succeeded but login failed', { cause })
    this.name = 'RegisteredButLoginFailedError'
  }
}

const AuthContext = createContext<AuthContextValue | null>(null)

function currentUser(): CurrentUser | null {
  return pb.authStore.isValid ? toCurrentUser(pb.authStore.record as Record<string, unknown> | null) : null
}

export function AuthProvider({ children }: { children: ReactNode }) {
  const [status, setStatus] = useState<AuthStatus>(() => (pb.authStore.isValid ? 'loading' : 'signed-out'))
  const [user, setUser] = useState<CurrentUser | null>(null)

  useEffect(() => {
    const unsubscribe = pb.authStore.onChange(() => {
      const next = currentUser()
      setUser(next)
      setStatus(next ? 'signed-in' : 'signed-out')
    })
    let cancelled = false
    if (pb.authStore.isValid) {
      pb.collection('users')
        .authRefresh()
        .catch((err: unknown) => {
          // An aborted refresh (the page navigated away, or a newer refresh replaced it) is not a
          // failed one: keep the session; only the server's refusal signs the user out.
          if ((err as { isAbort?: boolean }).isAbort) return
          console.warn('Session refresh failed, signing out', err)
          pb.authStore.clear()
        })
        .finally(() => {
          if (cancelled) return
          const next = currentUser()
          setUser(next)
          setStatus(next ? 'signed-in' : 'signed-out')
        })
    } else {
      pb.authStore.clear()
    }
    return () => {
      cancelled = true
      unsubscribe()
    }
  }, [])

  const login = useCallback(async (email: string, password: string) => {
    await pb.collection('users').authWithPassword(email, password)
  }, [])

  const register = useCallback(async (email: string, password: string) => {
    await pb.collection('users').create({
      email,
      password,
      passwordConfirm: password,
      name: email.split('@')[0],
    })
    try {
      await pb.collection('users').authWithPassword(email, password)
    } catch (err) {
      throw new RegisteredButLoginFailedError(err)
    }
  }, [])

  const queryClient = useQueryClient()
  // Cached records belong to the user who fetched them; drop them with the session.
  const logout = useCallback(() => {
    pb.authStore.clear()
    queryClient.clear()
  }, [queryClient])

  const value = useMemo(
    () => ({ status, user, login, register, logout }),
    [status, user, login, register, logout],
  )
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>
}

export function useAuth(): AuthContextValue {
  const ctx = useContext(AuthContext)
  if (!ctx) throw new Error('useAuth has to be used within <AuthProvider>')
  return ctx
}

/** Sign-in error text per spec §8: the message, else 'Login failed'. */
export function loginErrorText(err: unknown): string {
  // A thrown non-object (never from the SDK) gets the final fallback.
  if (!err || typeof err !== 'object') return 'Authentication failed'
  return errorMessage(err, 'Login failed')
}

/** Registration error text per spec §8. */
export function registerErrorText(err: unknown): string {
  if (err instanceof RegisteredButLoginFailedError) return err.message
  return errorMessage(err, 'Registration failed')
}
