import * as DropdownMenu from '@radix-ui/react-dropdown-menu'
import { Check, ChevronDown, Cpu } from 'lucide-react'
import { cn } from '../../../lib/cn.ts'
import { formatGigabytes } from '../../../lib/format.ts'
import { formatModelSize } from '../../../lib/model-size.ts'
import { nodeCountLabel, type ChatModel } from '../chat-types.ts'

export interface ModelPickerProps {
  models: ChatModel[]
  loading: boolean
  selected: ChatModel | null
  onSelect: (model: ChatModel) => void
}

/** Size in GB with one decimal (spec §9); a model smaller than that reads '< 0.1 GB', not '0.0 GB'. */
function gigabytes(bytes: number): string {
  return bytes < 0.05 * 1024 ** 3 ? '< 0.1 GB' : formatGigabytes(bytes)
}

/** Model dropdown: name, description, credits and node count; 'Unavailable' models are disabled. */
export function ModelPicker({ models, loading, selected, onSelect }: ModelPickerProps) {
  const noneOnline = models.length > 0 && models.every((m) => !m.isAvailable)
  return (
    <DropdownMenu.Root modal={false}>
      <DropdownMenu.Trigger className="focus-ring inline-flex max-w-full items-center gap-2 rounded-lg border border-slate-300 bg-white px-3 py-2 text-sm font-medium text-slate-800 shadow-sm hover:bg-slate-50 dark:border-slate-700 dark:bg-slate-900 dark:text-slate-100 dark:hover:bg-slate-800">
        <Cpu className="h-4 w-4 shrink-0 text-brand-600 dark:text-brand-400" aria-hidden />
        <span className="sr-only">Model: </span>
        <span className="max-w-[9rem] truncate sm:max-w-[16rem]">
          {selected ? selected.name : loading ? 'Loading models...' : 'Select a model'}
        </span>
        <ChevronDown className="h-4 w-4 shrink-0 text-slate-400" aria-hidden />
      </DropdownMenu.Trigger>
      <DropdownMenu.Portal>
        <DropdownMenu.Content
          align="center"
          sideOffset={6}
          className="z-50 max-h-[60vh] w-[min(24rem,calc(100vw-2rem))] animate-fade-in overflow-y-auto rounded-xl border border-slate-200 bg-white p-1.5 shadow-xl dark:border-slate-800 dark:bg-slate-900"
        >
          {models.length === 0 && !loading && (
            <p className="px-3 py-4 text-center text-sm text-slate-500 dark:text-slate-400">
              No models configured
            </p>
          )}
          {noneOnline && (
            <p className="px-3 pt-2 pb-1 text-xs font-medium text-amber-700 dark:text-amber-400">
              No nodes available
            </p>
          )}
          {models.map((m) => (
            <DropdownMenu.Item
              key={m.id}
              disabled={!m.isAvailable}
              onSelect={() => onSelect(m)}
              className="flex cursor-pointer items-start gap-3 rounded-lg px-3 py-2.5 outline-none data-[disabled]:cursor-not-allowed data-[disabled]:opacity-55 data-[highlighted]:bg-slate-100 dark:data-[highlighted]:bg-slate-800"
            >
              <div className="min-w-0 flex-1">
                <div className="flex items-center gap-2">
                  <span className="truncate text-sm font-medium text-slate-900 dark:text-white">
                    {m.name}
                  </span>
                  {!m.isAvailable && (
                    <span className="rounded-full bg-red-100 px-2 py-0.5 text-[11px] font-medium text-red-700 dark:bg-red-950 dark:text-red-300">
                      Unavailable
                    </span>
                  )}
                </div>
                <p className="mt-0.5 line-clamp-2 text-xs text-slate-500 dark:text-slate-400">
                  {m.description}
                </p>
                <p className="mt-1 flex gap-3 text-[11px] font-medium text-slate-600 dark:text-slate-400">
                  <span>{m.creditMultiplier}x credits</span>
                  {m.size && <span>{formatModelSize(m.size, gigabytes)}</span>}
                  <span
                    className={cn(m.isAvailable ? 'text-emerald-700 dark:text-emerald-400' : '')}
                  >
                    {nodeCountLabel(m.nodeCount)}
                  </span>
                </p>
              </div>
              {selected?.id === m.id && (
                <Check className="mt-0.5 h-4 w-4 text-brand-600" aria-hidden />
              )}
            </DropdownMenu.Item>
          ))}
        </DropdownMenu.Content>
      </DropdownMenu.Portal>
    </DropdownMenu.Root>
  )
}
