import { AlertTriangle } from 'lucide-react'

/** Red banner shown while the selected model has no online node. */
export function ModelUnavailableBanner({ model }: { model: string }) {
  return (
    <div
      role="alert"
      className="flex shrink-0 items-start gap-3 border-b border-red-200 bg-red-50 px-4 py-3 text-sm text-red-800 dark:border-red-900/60 dark:bg-red-950/40 dark:text-red-200"
    >
      <AlertTriangle className="mt-0.5 h-4 w-4 shrink-0" aria-hidden />
      <div>
        <p className="font-semibold">Model Unavailable</p>
        <p className="text-red-700 dark:text-red-300">
          No nodes are online for {model}. New messages cannot be sent until a node serves it.
        </p>
      </div>
    </div>
  )
}
