/**
 * @module In-app replacements for window.alert and window.confirm: a confirmation dialog and
 * toasts carrying the spec's texts (sections 5 and 8). Native boxes block the page, cannot be
 * styled or themed, and some browsers let users suppress them for good.
 */
import { createContext, useCallback, useContext, useMemo, useRef, useState } from 'react'
import type { ReactNode } from 'react'
import { ConfirmDialog, type ConfirmRequest } from './confirm-dialog.tsx'
import { Toaster, type ToastItem, type ToastTone } from './toaster.tsx'

export interface ConfirmOptions {
  /** Dialog heading; the message (the spec's question) is its description. */
  title?: string
  confirmLabel?: string
  /** Red confirm button, for deletions. */
  destructive?: boolean
}

export interface Feedback {
  /** Resolves true when the user confirms, false on Cancel, Escape or a click outside. */
  confirm(message: string, options?: ConfirmOptions): Promise<boolean>
  /** A short message that goes away by itself (errors stay longer and are announced at once). */
  toast(message: string, tone?: ToastTone): void
}

const FeedbackContext = createContext<Feedback | null>(null)

export function FeedbackProvider({ children }: { children: ReactNode }) {
  const [pending, setPending] = useState<ConfirmRequest | null>(null)
  const [toasts, setToasts] = useState<ToastItem[]>([])
  const nextId = useRef(0)

  const confirm = useCallback(
    (message: string, options: ConfirmOptions = {}) =>
      new Promise<boolean>((resolve) => {
        setPending((current) => {
          // A second question replaces an unanswered one, which counts as cancelled.
          current?.resolve(false)
          return { message, ...options, resolve }
        })
      }),
    [],
  )
  const toast = useCallback((message: string, tone: ToastTone = 'info') => {
    const id = ++nextId.current
    setToasts((list) => [...list.slice(-2), { id, message, tone }])
  }, [])
  const dismiss = useCallback(
    (id: number) => setToasts((list) => list.filter((t) => t.id !== id)),
    [],
  )
  const answer = useCallback((ok: boolean) => {
    setPending((current) => {
      current?.resolve(ok)
      return null
    })
  }, [])

  const value = useMemo(() => ({ confirm, toast }), [confirm, toast])
  return (
    <FeedbackContext.Provider value={value}>
      {children}
      <ConfirmDialog request={pending} onAnswer={answer} />
      <Toaster toasts={toasts} onDismiss={dismiss} />
    </FeedbackContext.Provider>
  )
}

export function useFeedback(): Feedback {
  const ctx = useContext(FeedbackContext)
  if (!ctx) throw new Error('useFeedback has to be used within <FeedbackProvider>')
  return ctx
}
