import * as Switch from '@radix-ui/react-switch'
import { AlertTriangle } from 'lucide-react'
import { cn } from '../../../lib/cn.ts'
import { activeToggleState } from '../node-model-state.ts'

export interface NodeActiveToggleProps {
  isActive: boolean
  serving: boolean
  busy: boolean
  /** The node is connected. An offline node takes no requests, whatever the switch says. */
  online?: boolean
  onChange: (next: boolean) => void
}

/** 'Node Status' Active/Inactive switch with the serving-model rule of spec §4. */
export function NodeActiveToggle({
  isActive,
  serving,
  busy,
  online = true,
  onChange,
}: NodeActiveToggleProps) {
  const state = activeToggleState(isActive, serving)
  // Offline, nothing is live: no green switch, no red 'active but not serving' alarm either.
  const danger = online && state.danger
  return (
    <div>
      <div className="flex items-center justify-between gap-4">
        <div>
          <p id="node-status-label" className="text-sm font-medium text-slate-900 dark:text-white">
            Node Status
          </p>
          <p id="node-status-state" className="text-sm text-slate-500 dark:text-slate-400">
            {isActive ? 'Active' : 'Inactive'}
            {online ? '' : ' · offline: takes no requests until it reconnects'}
          </p>
        </div>
        <Switch.Root
          checked={isActive}
          disabled={state.disabled || busy}
          onCheckedChange={onChange}
          aria-labelledby="node-status-label"
          aria-describedby="node-status-state"
          className={cn(
            'focus-ring relative h-6 w-11 shrink-0 rounded-full transition-colors disabled:cursor-not-allowed disabled:opacity-50',
            danger
              ? 'bg-red-600'
              : isActive
                ? online
                  ? 'bg-emerald-600'
                  : 'bg-slate-500 dark:bg-slate-500'
                : 'bg-slate-300 dark:bg-slate-700',
          )}
        >
          <Switch.Thumb className="block h-5 w-5 translate-x-0.5 rounded-full bg-white shadow transition-transform data-[state=checked]:translate-x-[1.375rem]" />
        </Switch.Root>
      </div>
      {state.warning && (
        <p
          role="note"
          className={cn(
            'mt-3 flex items-start gap-2 rounded-lg px-3 py-2 text-sm',
            danger
              ? 'bg-red-50 text-red-800 dark:bg-red-500/10 dark:text-red-200'
              : 'bg-amber-50 text-amber-800 dark:bg-amber-500/10 dark:text-amber-200',
          )}
        >
          <AlertTriangle className="mt-0.5 h-4 w-4 shrink-0" aria-hidden />
          {danger
            ? 'This node is active but no model is serving, so it cannot take requests. Start serving a model below.'
            : 'Start serving at least one model before activating this node.'}
        </p>
      )}
    </div>
  )
}
