import {
  AlertTriangle,
  CheckCircle2,
  Download,
  Loader2,
  MemoryStick,
  Play,
  PlugZap,
  RotateCw,
  Square,
  Trash2,
  X,
} from 'lucide-react'
import { Button } from '../../../components/button.tsx'
import { formatGigabytes, formatTokensPerSecond } from '../../../lib/format.ts'
import { catalogueSize, formatModelSize } from '../../../lib/model-size.ts'
import { modelLabel } from '../../../lib/node-records.ts'
import {
  canDeleteModel,
  nodeModelPhase,
  parseDownloadPercent,
  servingFailed,
  type MemoryFit,
  type ModelEntry,
} from '../node-model-state.ts'
import type { NodeModelAction } from '../nodes-api.ts'

export interface NodeModelRowProps {
  entry: ModelEntry
  busy: boolean
  /** The node is connected; when it is not, nothing it reported is happening now. */
  nodeOnline: boolean
  /** Whether the model fits the node's reported memory (null: not known). */
  fit?: MemoryFit | null
  onAction: (action: NodeModelAction) => void
}

const muted = 'font-medium text-slate-600 dark:text-slate-300'

/** One catalogue model on this node, with the lifecycle buttons of spec §4. */
export function NodeModelRow({ entry, busy, nodeOnline, fit, onAction }: NodeModelRowProps) {
  const { model, record } = entry
  const phase = nodeModelPhase(record)
  const percent = parseDownloadPercent(record?.download_progress)
  const loadFailed = servingFailed(record)
  const size = catalogueSize(model)
  return (
    <li className="rounded-lg border border-slate-200 p-3 dark:border-slate-800">
      <div className="flex flex-col gap-2 sm:flex-row sm:items-start sm:justify-between sm:gap-3">
        <div className="min-w-0">
          <p className="truncate font-medium text-slate-900 dark:text-white">{modelLabel(model)}</p>
          <p className="mt-0.5 flex flex-wrap gap-x-3 text-xs text-slate-500 dark:text-slate-400">
            {size ? <span>{formatModelSize(size)}</span> : null}
            {phase === 'serving' &&
              (nodeOnline ? (
                <span className="inline-flex items-center gap-1 font-medium text-emerald-700 dark:text-emerald-300">
                  <CheckCircle2 className="h-3.5 w-3.5" aria-hidden />
                  Serving · {formatTokensPerSecond(record?.tokens_per_second ?? 0)}
                </span>
              ) : (
                <span className={`inline-flex items-center gap-1 ${muted}`}>
                  <PlugZap className="h-3.5 w-3.5" aria-hidden />
                  Offline · serves again when the node reconnects
                </span>
              ))}
            {phase === 'downloaded' && (
              <span className={muted}>
                {!record?.requested_serving
                  ? 'Downloaded'
                  : loadFailed
                    ? 'Could not start serving'
                    : nodeOnline
                      ? 'Starting...'
                      : 'Offline · starts when the node reconnects'}
              </span>
            )}
            {phase === 'download-failed' && (
              <span className="font-medium text-red-700 dark:text-red-300">
                Download failed{percent > 0 ? ` at ${percent.toFixed(0)}%` : ''}
              </span>
            )}
          </p>
        </div>
        <div className="flex shrink-0 flex-wrap items-center gap-2">
          {phase === 'not-downloaded' && (
            <Button
              size="sm"
              variant="outline"
              disabled={busy}
              onClick={() =>
                onAction({ kind: 'download', modelId: model.id, recordId: record?.id })
              }
            >
              <Download className="h-4 w-4" aria-hidden />
              Download
            </Button>
          )}
          {phase === 'downloading' && record && (
            <Button
              size="sm"
              variant="outline"
              disabled={busy}
              onClick={() => onAction({ kind: 'cancel', recordId: record.id })}
            >
              <X className="h-4 w-4" aria-hidden />
              Cancel
            </Button>
          )}
          {(phase === 'download-failed' || loadFailed) && record && (
            <Button
              size="sm"
              variant="outline"
              disabled={busy}
              onClick={() => onAction({ kind: 'retry', recordId: record.id })}
            >
              <RotateCw className="h-4 w-4" aria-hidden />
              Retry
            </Button>
          )}
          {phase === 'download-failed' && record && (
            <Button
              size="sm"
              variant="ghost"
              disabled={busy}
              className="text-red-600 hover:text-red-700 dark:text-red-400"
              onClick={() => onAction({ kind: 'remove', recordId: record.id })}
            >
              <Trash2 className="h-4 w-4" aria-hidden />
              Remove
            </Button>
          )}
          {canDeleteModel(record) && record && (
            <Button
              size="sm"
              variant="ghost"
              disabled={busy}
              className="text-red-600 hover:text-red-700 dark:text-red-400"
              onClick={() => onAction({ kind: 'delete', recordId: record.id })}
            >
              <Trash2 className="h-4 w-4" aria-hidden />
              Delete
            </Button>
          )}
          {phase === 'downloaded' && record && !loadFailed && (
            <Button
              size="sm"
              disabled={busy || record.requested_serving}
              onClick={() => onAction({ kind: 'serve', recordId: record.id })}
            >
              <Play className="h-4 w-4" aria-hidden />
              Start Serving
            </Button>
          )}
          {phase === 'serving' && record && (
            <Button
              size="sm"
              variant="secondary"
              disabled={busy}
              onClick={() => onAction({ kind: 'stop', recordId: record.id })}
            >
              <Square className="h-4 w-4" aria-hidden />
              Stop Serving
            </Button>
          )}
        </div>
      </div>
      {phase === 'downloading' && (
        <div className="mt-3">
          <div className="mb-1 flex items-center justify-between text-xs text-slate-600 dark:text-slate-400">
            {nodeOnline ? (
              <span className="inline-flex items-center gap-1">
                <Loader2 className="h-3.5 w-3.5 animate-spin" aria-hidden />
                Downloading
              </span>
            ) : (
              <span className="inline-flex items-center gap-1">
                <PlugZap className="h-3.5 w-3.5" aria-hidden />
                Offline · the download goes on when the node reconnects
              </span>
            )}
            <span className="tabular-nums">{percent.toFixed(0)}%</span>
          </div>
          <div
            role="progressbar"
            aria-label={`Downloading ${modelLabel(model)}`}
            aria-valuemin={0}
            aria-valuemax={100}
            aria-valuenow={Math.round(percent)}
            className="h-2 overflow-hidden rounded-full bg-slate-200 dark:bg-slate-800"
          >
            <div
              className="h-full rounded-full bg-brand-600 transition-[width]"
              style={{ width: `${percent}%` }}
            />
          </div>
        </div>
      )}
      {fit && !fit.fits && (
        <p
          role="note"
          className="mt-2 flex gap-1.5 rounded-md bg-amber-50 px-2 py-1 text-xs text-amber-900 dark:bg-amber-500/10 dark:text-amber-100"
        >
          <MemoryStick className="mt-px h-3.5 w-3.5 shrink-0" aria-hidden />
          <span>
            Too large for this node: needs about {formatGigabytes(fit.needBytes)} of memory; it
            reports {formatGigabytes(fit.ramBytes)} RAM
            {fit.vramBytes ? ` and ${formatGigabytes(fit.vramBytes)} GPU memory` : ''}.
          </span>
        </p>
      )}
      {record?.error_message && (
        <p
          role="alert"
          className="mt-2 flex gap-1.5 rounded-md bg-red-50 px-2 py-1 text-xs text-red-700 dark:bg-red-500/10 dark:text-red-300"
        >
          <AlertTriangle className="mt-px h-3.5 w-3.5 shrink-0" aria-hidden />
          <span className="min-w-0 break-words">{record.error_message}</span>
        </p>
      )}
    </li>
  )
}
