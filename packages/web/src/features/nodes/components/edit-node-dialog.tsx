import * as Dialog from '@radix-ui/react-dialog'
import { X } from 'lucide-react'
import { useState } from 'react'
import { Button } from '../../../components/button.tsx'
import { useFeedback } from '../../../components/feedback/feedback-context.tsx'
import { Spinner } from '../../../components/spinner.tsx'
import { errorMessage } from '../../../lib/api-error.ts'
import { catalogueSize } from '../../../lib/model-size.ts'
import type { NodeRecord } from '../../../lib/node-records.ts'
import { hasServingModel, isNodeOnline, memoryFit, mergeModelEntries } from '../node-model-state.ts'
import {
  actionFailure,
  useCatalogue,
  useLiveNode,
  useNodeModelAction,
  useNodeModels,
  useUpdateNode,
  type NodeModelAction,
} from '../nodes-api.ts'
import { NodeActiveToggle } from './node-active-toggle.tsx'
import { NodeModelRow } from './node-model-row.tsx'

/** Spec §5: model deletion asks this first. */
export const DELETE_MODEL_CONFIRM =
  'Are you sure you want to delete this model? This will remove the downloaded files from your node.'

export interface EditNodeDialogProps {
  node: NodeRecord
  onClose: () => void
}

/** 'Edit Node': device name, Node Status toggle and the per-model list (spec §2, §4). */
export function EditNodeDialog({ node, onClose }: EditNodeDialogProps) {
  return (
    <Dialog.Root open onOpenChange={(open) => !open && onClose()}>
      <Dialog.Portal>
        <Dialog.Overlay className="fixed inset-0 z-40 animate-fade-in bg-slate-900/50 backdrop-blur-sm" />
        <Dialog.Content className="fixed top-1/2 left-1/2 z-50 flex max-h-[calc(100dvh-2rem)] w-[min(40rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 flex-col rounded-2xl border border-slate-200 bg-white shadow-2xl dark:border-slate-800 dark:bg-slate-900">
          <div className="flex items-center justify-between border-b border-slate-200 px-6 py-4 dark:border-slate-800">
            <Dialog.Title className="text-lg font-semibold text-slate-900 dark:text-white">
              Edit Node
            </Dialog.Title>
            <Dialog.Close
              aria-label="Close"
              className="focus-ring rounded-lg p-1.5 text-slate-500 hover:bg-slate-100 dark:hover:bg-slate-800"
            >
              <X className="h-4 w-4" aria-hidden />
            </Dialog.Close>
          </div>
          <Dialog.Description className="sr-only">
            Rename the node, switch it on or off and choose its models.
          </Dialog.Description>
          <EditNodeBody node={node} />
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  )
}

/** The dialog's content, separate so that tests can render it without a portal. */
export function EditNodeBody({ node: initial }: { node: NodeRecord }) {
  const node = useLiveNode(initial)
  const online = isNodeOnline(node.status)
  const [deviceName, setDeviceName] = useState(node.device_name)
  const [isActive, setIsActive] = useState(node.is_active)
  const updateNode = useUpdateNode()
  const catalogue = useCatalogue()
  const nodeModels = useNodeModels(node.id)
  const modelAction = useNodeModelAction(node.id)
  const { confirm, toast } = useFeedback()
  const records = nodeModels.data ?? []
  const entries = mergeModelEntries(catalogue.data ?? [], records)

  const saveName = () => {
    updateNode.mutate(
      { id: node.id, data: { device_name: deviceName.trim() } },
      {
        onSuccess: () => toast('Device name updated successfully!', 'success'),
        onError: (err) =>
          toast(`Failed to update device name: ${errorMessage(err, 'Unknown error')}`, 'error'),
      },
    )
  }

  const toggleActive = (next: boolean) => {
    const previous = isActive
    setIsActive(next)
    updateNode.mutate(
      { id: node.id, data: { is_active: next } },
      {
        onError: (err) => {
          setIsActive(previous)
          toast(`Failed to update node status: ${errorMessage(err, 'Unknown error')}`, 'error')
        },
      },
    )
  }

  const runAction = async (action: NodeModelAction) => {
    if (
      action.kind === 'delete' &&
      !(await confirm(DELETE_MODEL_CONFIRM, {
        title: 'Delete model',
        confirmLabel: 'Delete',
        destructive: true,
      }))
    )
      return
    modelAction.mutate(action, {
      onError: (err) =>
        toast(`${actionFailure[action.kind]}: ${errorMessage(err, 'Unknown error')}`, 'error'),
    })
  }

  return (
    <div className="space-y-6 overflow-y-auto px-6 py-5">
      <form
        onSubmit={(e) => {
          e.preventDefault()
          if (deviceName.trim()) saveName()
        }}
      >
        <label
          htmlFor="device-name"
          className="mb-1.5 block text-sm font-medium text-slate-900 dark:text-white"
        >
          Device Name
        </label>
        <div className="flex gap-2">
          <input
            id="device-name"
            value={deviceName}
            onChange={(e) => setDeviceName(e.target.value)}
            required
            className="focus-ring h-10 min-w-0 flex-1 rounded-lg border border-slate-300 bg-white px-3 text-sm text-slate-900 dark:border-slate-700 dark:bg-slate-950 dark:text-white"
          />
          <Button type="submit" disabled={!deviceName.trim() || updateNode.isPending}>
            Update
          </Button>
        </div>
      </form>
      <NodeActiveToggle
        isActive={isActive}
        serving={hasServingModel(records)}
        busy={updateNode.isPending}
        online={online}
        onChange={toggleActive}
      />
      <section>
        <h3 className="mb-1 text-sm font-medium text-slate-900 dark:text-white">Models</h3>
        <p className="mb-3 text-sm text-slate-500 dark:text-slate-400">
          {online
            ? 'Choose which models this node downloads and serves. Changes reach the node within seconds.'
            : 'This node is offline: it serves nothing now. Your choices reach it when it reconnects.'}
        </p>
        {catalogue.isLoading || nodeModels.isLoading ? (
          <Spinner className="py-8" />
        ) : entries.length === 0 ? (
          <p className="py-6 text-center text-sm text-slate-500 dark:text-slate-400">
            No models in the catalogue
          </p>
        ) : (
          <ul className="space-y-2">
            {entries.map((entry) => (
              <NodeModelRow
                key={entry.model.id}
                entry={entry}
                busy={modelAction.isPending}
                nodeOnline={online}
                fit={memoryFit(catalogueSize(entry.model)?.bytes, node.hardware)}
                onAction={(action) => void runAction(action)}
              />
            ))}
          </ul>
        )}
      </section>
    </div>
  )
}
