import { AlertCircle } from 'lucide-react'
import { useState } from 'react'
import type { FormEvent } from 'react'
import { Navigate, useLocation, useNavigate, useSearchParams } from 'react-router'
import { Button } from '../../components/button.tsx'
import { Logo } from '../../components/logo.tsx'
import { loginErrorText, registerErrorText, useAuth } from '../../context/auth-context.tsx'
import { parseReturnParam } from '../../lib/return-url.ts'
import { LOGIN_COPY, type LoginMode } from './login-copy.ts'

interface FromState {
  from?: { pathname?: string; search?: string; hash?: string }
}

function originPath(state: unknown): string | null {
  const from = (state as FromState | null)?.from
  if (!from?.pathname || from.pathname === '/login') return null
  return `${from.pathname}${from.search ?? ''}${from.hash ?? ''}`
}

/** Sign-in and account creation on one screen, without the app shell (spec §2). */
export default function LoginPage() {
  const { status, login, register } = useAuth()
  const [searchParams] = useSearchParams()
  const location = useLocation()
  const navigate = useNavigate()
  const [mode, setMode] = useState<LoginMode>('signin')
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [error, setError] = useState('')
  const [busy, setBusy] = useState(false)
  const copy = LOGIN_COPY[mode]
  const target =
    parseReturnParam(searchParams.get('return')) ?? originPath(location.state) ?? '/chat'

  if (status === 'signed-in' && !busy) return <Navigate to={target} replace />

  const toggleMode = () => {
    setMode((m) => (m === 'signin' ? 'register' : 'signin'))
    setEmail('')
    setPassword('')
    setError('')
  }

  const onSubmit = async (e: FormEvent) => {
    e.preventDefault()
    if (!email || !password) {
      setError('Please fill in all fields')
      return
    }
    setError('')
    setBusy(true)
    try {
      if (mode === 'signin') await login(email, password)
      else await register(email, password)
      void navigate(target, { replace: true })
    } catch (err) {
      setError(mode === 'signin' ? loginErrorText(err) : registerErrorText(err))
    } finally {
      setBusy(false)
    }
  }

  const inputClass =
    'focus-ring block w-full rounded-lg border border-slate-300 bg-white px-3 py-2.5 text-sm text-slate-900 placeholder:text-slate-400 dark:border-slate-700 dark:bg-slate-900 dark:text-white'

  return (
    <main className="flex min-h-full items-center justify-center bg-gradient-to-b from-brand-50 to-white px-4 py-12 dark:from-slate-900 dark:to-slate-950">
      <div className="w-full max-w-sm">
        <div className="mb-8 flex flex-col items-center text-center">
          <Logo className="mb-4 h-12 w-12" />
          <h1 className="text-2xl font-semibold tracking-tight text-slate-900 dark:text-white">
            {copy.heading}
          </h1>
          <p className="mt-1.5 text-sm text-slate-600 dark:text-slate-400">{copy.subtitle}</p>
        </div>
        <form
          noValidate
          onSubmit={onSubmit}
          className="space-y-4 rounded-2xl border border-slate-200 bg-white p-6 shadow-sm dark:border-slate-800 dark:bg-slate-900"
        >
          {error && (
            <div
              role="alert"
              className="flex items-start gap-2 rounded-lg border border-red-200 bg-red-50 px-3 py-2.5 text-sm text-red-700 dark:border-red-900/60 dark:bg-red-950/50 dark:text-red-300"
            >
              <AlertCircle className="mt-0.5 h-4 w-4 shrink-0" aria-hidden />
              <span>{error}</span>
            </div>
          )}
          <div>
            <label
              htmlFor="email"
              className="mb-1.5 block text-sm font-medium text-slate-700 dark:text-slate-300"
            >
              Email
            </label>
            <input
              id="email"
              type="email"
              autoComplete="email"
              placeholder="you@example.com"
              value={email}
              onChange={(e) => setEmail(e.target.value)}
              className={inputClass}
            />
          </div>
          <div>
            <label
              htmlFor="password"
              className="mb-1.5 block text-sm font-medium text-slate-700 dark:text-slate-300"
            >
              Password
            </label>
            <input
              id="password"
              type="password"
              autoComplete={mode === 'signin' ? 'current-password' : 'new-password'}
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              className={inputClass}
            />
          </div>
          <Button type="submit" disabled={busy} className="w-full">
            {busy ? copy.busy : copy.submit}
          </Button>
        </form>
        <p className="mt-6 text-center text-sm">
          <button
            type="button"
            onClick={toggleMode}
            className="focus-ring rounded font-medium text-brand-600 hover:text-brand-700 dark:text-brand-400 dark:hover:text-brand-300"
          >
            {copy.toggle}
          </button>
        </p>
      </div>
    </main>
  )
}
