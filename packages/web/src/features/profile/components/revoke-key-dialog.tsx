import * as Dialog from '@radix-ui/react-dialog'
import { Button } from '../../../components/button.tsx'
import type { ApiKey } from '../api-keys-api.ts'

export interface RevokeKeyDialogProps {
  /** The key being revoked; null: closed. */
  apiKey: ApiKey | null
  pending: boolean
  error: string
  onCancel: () => void
  onConfirm: (key: ApiKey) => void
}

/** The in-app confirmation before a key is revoked. */
export function RevokeKeyDialog({
  apiKey,
  pending,
  error,
  onCancel,
  onConfirm,
}: RevokeKeyDialogProps) {
  return (
    <Dialog.Root open={apiKey !== null} onOpenChange={(open) => !open && onCancel()}>
      <Dialog.Portal>
        <Dialog.Overlay className="fixed inset-0 z-40 animate-fade-in bg-slate-900/50 backdrop-blur-sm" />
        <Dialog.Content className="fixed top-1/2 left-1/2 z-50 w-[min(28rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 rounded-2xl border border-slate-200 bg-white p-6 shadow-2xl dark:border-slate-800 dark:bg-slate-900">
          <Dialog.Title className="text-lg font-semibold text-slate-900 dark:text-white">
            Revoke API key?
          </Dialog.Title>
          <Dialog.Description className="mt-2 text-sm text-slate-600 dark:text-slate-400">
            Programs using “{apiKey?.name}” ({apiKey?.hint}) will stop working at once. This cannot
            be undone.
          </Dialog.Description>
          {error && (
            <p role="alert" className="mt-3 text-sm text-red-600 dark:text-red-400">
              {error}
            </p>
          )}
          <div className="mt-6 flex justify-end gap-2">
            <Button variant="outline" onClick={onCancel}>
              Cancel
            </Button>
            <Button variant="danger" disabled={pending} onClick={() => apiKey && onConfirm(apiKey)}>
              {pending ? 'Revoking...' : 'Revoke key'}
            </Button>
          </div>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  )
}
