import * as AlertDialog from '@radix-ui/react-alert-dialog'
import { Button } from '../button.tsx'

export interface ConfirmRequest {
  message: string
  title?: string
  confirmLabel?: string
  destructive?: boolean
  resolve: (ok: boolean) => void
}

/** The one confirmation dialog of the app: the spec's question, Cancel and a confirm button. */
export function ConfirmDialog({
  request,
  onAnswer,
}: {
  request: ConfirmRequest | null
  onAnswer: (ok: boolean) => void
}) {
  return (
    <AlertDialog.Root open={!!request} onOpenChange={(open) => !open && onAnswer(false)}>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="fixed inset-0 z-50 animate-fade-in bg-slate-900/50 backdrop-blur-sm" />
        <AlertDialog.Content className="fixed top-1/2 left-1/2 z-50 w-[min(26rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 rounded-2xl border border-slate-200 bg-white p-6 shadow-2xl dark:border-slate-800 dark:bg-slate-900">
          <AlertDialog.Title className="text-lg font-semibold text-slate-900 dark:text-white">
            {request?.title ?? 'Please confirm'}
          </AlertDialog.Title>
          <AlertDialog.Description className="mt-2 text-sm text-slate-600 dark:text-slate-300">
            {request?.message}
          </AlertDialog.Description>
          <div className="mt-6 flex justify-end gap-2">
            <AlertDialog.Cancel asChild>
              <Button variant="outline">Cancel</Button>
            </AlertDialog.Cancel>
            <AlertDialog.Action asChild>
              <Button
                variant={request?.destructive ? 'danger' : 'primary'}
                onClick={() => onAnswer(true)}
              >
                {request?.confirmLabel ?? 'OK'}
              </Button>
            </AlertDialog.Action>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  )
}
