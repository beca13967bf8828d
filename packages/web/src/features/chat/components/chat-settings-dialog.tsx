import * as Dialog from '@radix-ui/react-dialog'
import * as Slider from '@radix-ui/react-slider'
import { Settings, X } from 'lucide-react'
import { useEffect, useState } from 'react'
import { Button } from '../../../components/button.tsx'

export interface ChatSettingsDialogProps {
  /** The conversation's saved temperature (or the one a new conversation will get). */
  temperature: number
  /** Called once a change is let go of (pointer up, key press), not on every step of a drag. */
  onSave: (temperature: number) => void
}

/** Gear button + 'Chat Settings' dialog with the temperature slider (0 to 2, step 0.1). */
export function ChatSettingsDialog({ temperature: saved, onSave }: ChatSettingsDialogProps) {
  const [temperature, setTemperature] = useState(saved)
  useEffect(() => setTemperature(saved), [saved])
  const round = (v: number) => Math.round(v * 10) / 10
  return (
    <Dialog.Root>
      <Dialog.Trigger
        aria-label="Chat settings"
        className="focus-ring rounded-lg p-2 text-slate-500 hover:bg-slate-100 hover:text-slate-900 dark:text-slate-400 dark:hover:bg-slate-800 dark:hover:text-white"
      >
        <Settings className="h-5 w-5" aria-hidden />
      </Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="fixed inset-0 z-40 animate-fade-in bg-slate-900/50 backdrop-blur-sm" />
        <Dialog.Content className="fixed top-1/2 left-1/2 z-50 w-[min(28rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 rounded-2xl border border-slate-200 bg-white p-6 shadow-2xl dark:border-slate-800 dark:bg-slate-900">
          <div className="mb-1 flex items-center justify-between">
            <Dialog.Title className="text-lg font-semibold text-slate-900 dark:text-white">
              Chat Settings
            </Dialog.Title>
            <Dialog.Close
              aria-label="Close"
              className="focus-ring rounded-lg p-1.5 text-slate-500 hover:bg-slate-100 dark:hover:bg-slate-800"
            >
              <X className="h-4 w-4" aria-hidden />
            </Dialog.Close>
          </div>
          <Dialog.Description className="mb-6 text-sm text-slate-500 dark:text-slate-400">
            How freely the model picks its words in this conversation. Saved with the conversation.
          </Dialog.Description>
          <div className="mb-3 flex items-center justify-between">
            <span
              id="temperature-label"
              className="text-sm font-medium text-slate-700 dark:text-slate-300"
            >
              Temperature
            </span>
            <span className="rounded-md bg-slate-100 px-2 py-0.5 font-mono text-sm tabular-nums dark:bg-slate-800">
              {temperature.toFixed(1)}
            </span>
          </div>
          <Slider.Root
            min={0}
            max={2}
            step={0.1}
            value={[temperature]}
            onValueChange={([v]) => setTemperature(round(v))}
            onValueCommit={([v]) => onSave(round(v))}
            className="relative flex h-5 w-full touch-none items-center select-none"
          >
            <Slider.Track className="relative h-1.5 grow rounded-full bg-slate-200 dark:bg-slate-700">
              <Slider.Range className="absolute h-full rounded-full bg-brand-600" />
            </Slider.Track>
            <Slider.Thumb
              aria-labelledby="temperature-label"
              className="focus-ring block h-5 w-5 rounded-full border-2 border-brand-600 bg-white shadow"
            />
          </Slider.Root>
          <div className="mt-2 flex justify-between text-xs text-slate-500 dark:text-slate-400">
            <span>Focused 0.0</span>
            <span>Balanced 1.0</span>
            <span>Creative 2.0</span>
          </div>
          <div className="mt-8 flex justify-end">
            <Dialog.Close asChild>
              <Button>Done</Button>
            </Dialog.Close>
          </div>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  )
}
