/**
 * @module Authentication state (spec §4): loading, then signed-in or signed-out.
 * A stored valid session is restored at start and refreshed; a failed refresh logs out.
 */
import { createContext, useCallback, useContext, useEffect, useMemo, useState } from 'react'
import type { ReactNode } from 'react'
import { useQueryClient } from '@tanstack/react-query'
import { ClientResponseError } from 'pocketbase'
import { errorMessage, fieldReasons, isUnreachable } from '../lib/api-error.ts'
import { takeBoot, type BootResponse } from '../lib/boot-results.ts'
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

let startupRefresh: Promise<unknown> | null = null

/**
 * Starts refreshing the stored session before the first render (main.tsx), so the refresh travels
 * alongside the first screen's code and data instead of after them. The provider takes it over.
 */
/** What the SDK's authRefresh does with the answer boot.ts got: save it, or throw as the SDK would. */
function saveRefreshed(answer: BootResponse): void {
  const body = (answer.body ?? {}) as { token?: string; record?: Record<string, unknown> }
  if (!answer.ok || !body.token || !body.record) {
    throw new ClientResponseError({
      status: answer.status,
      response: answer.body as Record<string, unknown>,
    })
  }
  pb.authStore.save(body.token, body.record as never)
}

function unreachable(err: unknown): never {
  throw new ClientResponseError({ status: 0, originalError: err })
}

export function startSessionRefresh(): void {
  if (!pb.authStore.isValid) return
  const early = takeBoot('auth-refresh')
  startupRefresh = early
    ? early.then(saveRefreshed, unreachable)
    : pb.collection('users').authRefresh()
  // Handled by the provider once it mounts; until then a refusal is not an unhandled rejection.
  startupRefresh.catch(() => {})
}

function currentUser(): CurrentUser | null {
  return pb.authStore.isValid
    ? toCurrentUser(pb.authStore.record as Record<string, unknown> | null)
    : null
}

export function AuthProvider({ children }: { children: ReactNode }) {
  const [status, setStatus] = useState<AuthStatus>(() =>
    pb.authStore.isValid ? 'loading' : 'signed-out',
  )
  const [user, setUser] = useState<CurrentUser | null>(null)

  useEffect(() => {
    const unsubscribe = pb.authStore.onChange(() => {
      const next = currentUser()
      setUser(next)
      setStatus(next ? 'signed-in' : 'signed-out')
    })
    let cancelled = false
    if (pb.authStore.isValid) {
      const refresh = startupRefresh ?? pb.collection('users').authRefresh()
      startupRefresh = null
      refresh
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

/**
 * The server's reason: its per-field messages ('Password: Must be at least 8 character(s).') when
 * it sent any, else its message; a PocketBase message that only says the call failed ('Failed to
 * create record.') is not a reason, so it gives way to the field messages.
 */
function serverReason(err: unknown, fallback: string): string {
  const fields = fieldReasons(err)
  if (fields.length > 0 && !isUnreachable(err)) return fields.join(' ')
  return errorMessage(err, fallback)
}

/** Sign-in error text per spec §8: the reason, else 'Login failed', else 'Authentication failed'. */
export function loginErrorText(err: unknown): string {
  // A thrown non-object (never from the SDK) gets the final fallback.
  if (!err || typeof err !== 'object') return 'Authentication failed'
  return serverReason(err, 'Login failed')
}

/** Registration error text per spec §8: the reason, else 'Registration failed'. */
export function registerErrorText(err: unknown): string {
  if (err instanceof RegisteredButLoginFailedError) return err.message
  return serverReason(err, 'Registration failed')
}
