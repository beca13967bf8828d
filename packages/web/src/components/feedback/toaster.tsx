import * as Toast from '@radix-ui/react-toast'
import { AlertTriangle, CheckCircle2, Info, X } from 'lucide-react'
import { cn } from '../../lib/cn.ts'

export type ToastTone = 'info' | 'success' | 'error'

export interface ToastItem {
  id: number
  message: string
  tone: ToastTone
}

const tones: Record<ToastTone, { icon: typeof Info; className: string }> = {
  info: {
    icon: Info,
    className:
      'border-slate-200 bg-white text-slate-800 dark:border-slate-700 dark:bg-slate-900 dark:text-slate-100',
  },
  success: {
    icon: CheckCircle2,
    className:
      'border-emerald-200 bg-emerald-50 text-emerald-900 dark:border-emerald-900 dark:bg-emerald-950 dark:text-emerald-100',
  },
  error: {
    icon: AlertTriangle,
    className:
      'border-red-200 bg-red-50 text-red-900 dark:border-red-900 dark:bg-red-950 dark:text-red-100',
  },
}

/** Toasts at the top right, under the top bar (clear of the composer); errors stay 8 s. */
export function Toaster({
  toasts,
  onDismiss,
}: {
  toasts: ToastItem[]
  onDismiss: (id: number) => void
}) {
  return (
    <Toast.Provider swipeDirection="right" label="Notification">
      {toasts.map((t) => {
        const { icon: Icon, className } = tones[t.tone]
        return (
          <Toast.Root
            key={t.id}
            type={t.tone === 'error' ? 'foreground' : 'background'}
            duration={t.tone === 'error' ? 8000 : 4000}
            onOpenChange={(open) => !open && onDismiss(t.id)}
            className={cn(
              'pointer-events-auto flex w-full items-start gap-3 rounded-xl border px-4 py-3 text-sm shadow-lg animate-fade-in',
              className,
            )}
          >
            <Icon className="mt-0.5 h-4 w-4 shrink-0" aria-hidden />
            <Toast.Description className="min-w-0 flex-1 break-words">
              {t.message}
            </Toast.Description>
            <Toast.Close
              aria-label="Dismiss"
              className="focus-ring -m-1 rounded p-1 opacity-70 hover:opacity-100"
            >
              <X className="h-4 w-4" aria-hidden />
            </Toast.Close>
          </Toast.Root>
        )
      })}
      <Toast.Viewport className="fixed top-16 right-2 left-2 z-[60] flex flex-col gap-2 outline-none sm:right-4 sm:left-auto sm:w-96" />
    </Toast.Provider>
  )
}
