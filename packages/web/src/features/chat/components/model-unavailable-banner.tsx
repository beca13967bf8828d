import { AlertTriangle } from 'lucide-react'
import { Link } from 'react-router'

/**
 * Red banner while the chosen model has no node serving it. It says which of the two it is: no
 * node online at all, or nodes online but none serving this model (then it says where to start
 * serving one). `onlineNodes` is undefined while that is still being asked.
 */
export function ModelUnavailableBanner({
  model,
  onlineNodes,
}: {
  model: string
  onlineNodes: number | undefined
}) {
  return (
    <div
      role="alert"
      className="flex shrink-0 items-start gap-3 border-b border-red-200 bg-red-50 px-4 py-3 text-sm text-red-800 dark:border-red-900/60 dark:bg-red-950/40 dark:text-red-200"
    >
      <AlertTriangle className="mt-0.5 h-4 w-4 shrink-0" aria-hidden />
      <div className="min-w-0">
        <p className="font-semibold">Model Unavailable</p>
        <p className="text-red-700 dark:text-red-300">
          {onlineNodes === undefined ? (
            <>No node is serving {model} right now, so new messages cannot be sent.</>
          ) : onlineNodes === 0 ? (
            <>
              No nodes are online, so new messages cannot be sent. They can be sent again as soon as
              a node connects.
            </>
          ) : (
            <>
              {onlineNodes === 1 ? '1 node is' : `${onlineNodes} nodes are`} online, but none is
              serving {model}, so new messages to it cannot be sent. Choose another model, or serve{' '}
              {model} on a node in{' '}
              <Link to="/nodes" className="font-medium underline underline-offset-2">
                My Nodes
              </Link>
              .
            </>
          )}
        </p>
      </div>
    </div>
  )
}
