import { Plus } from 'lucide-react'
import { Button } from '../../../components/button.tsx'
import { Logo } from '../../../components/logo.tsx'

/** Empty state: the welcome heading and, with no conversation open, a New chat button. */
export function ChatWelcome({
  onNewChat,
  canCreate,
}: {
  onNewChat?: () => void
  canCreate: boolean
}) {
  return (
    <div className="flex min-h-0 flex-1 flex-col items-center justify-center overflow-y-auto px-6 py-10 text-center">
      <Logo className="mb-5 h-14 w-14" />
      <h2 className="text-2xl font-semibold tracking-tight text-slate-900 sm:text-3xl dark:text-white">
        Welcome to Meshwork!
      </h2>
      <p className="mt-2 max-w-md text-sm text-slate-600 dark:text-slate-400">
        Start a conversation or select an existing one from the sidebar.
      </p>
      {onNewChat && (
        <Button className="mt-6" onClick={onNewChat} disabled={!canCreate}>
          <Plus className="h-4 w-4" aria-hidden /> New chat
        </Button>
      )}
    </div>
  )
}
