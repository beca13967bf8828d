import { Pencil, Server, Trash2 } from 'lucide-react'
import { cn } from '../lib/cn.ts'
import { formatNumber, formatReputation, parseRecordDate } from '../lib/format.ts'
import { deviceLabel, type NodeRecord } from '../lib/node-records.ts'
import { Button } from './button.tsx'
import { NodeStatusBadge } from './node-status-badge.tsx'

export interface NodeTableProps {
  nodes: NodeRecord[]
  showReputation?: boolean
  showActive?: boolean
  showActions?: boolean
  /** Status as a coloured pill; without it the status reads as a dot and a word. */
  showStatusBadge?: boolean
  emptyMessage?: string
  onEdit?: (node: NodeRecord) => void
  onDelete?: (node: NodeRecord) => void
}

// The last column (whichever the view shows) gets the same inset as the first.
const lastCellPadding = '[&>*:last-child]:pr-5 sm:[&>*:last-child]:pr-6'

/** 'Last seen' hover tip, 'Never' when absent. */
export function lastSeenTip(lastSeen: string | null | undefined): string {
  if (!lastSeen) return 'Last seen: Never'
  const date = parseRecordDate(lastSeen)
  return `Last seen: ${Number.isNaN(date.getTime()) ? 'Never' : date.toLocaleString()}`
}

/** The node list of My Nodes and Network Status (spec §2). */
export function NodeTable({
  nodes,
  showReputation = false,
  showActive = false,
  showActions = false,
  showStatusBadge = true,
  emptyMessage = 'No nodes',
  onEdit,
  onDelete,
}: NodeTableProps) {
  if (nodes.length === 0) {
    return (
      <div className="px-6 py-12 text-center">
        <Server className="mx-auto mb-3 h-8 w-8 text-slate-300 dark:text-slate-600" aria-hidden />
        <p className="text-sm text-slate-500 dark:text-slate-400">{emptyMessage}</p>
      </div>
    )
  }
  return (
    <div className="overflow-x-auto">
      <table className="w-full min-w-[40rem] text-left text-sm">
        <thead className="bg-slate-50 text-xs font-medium tracking-wide text-slate-500 uppercase dark:bg-slate-950/40 dark:text-slate-400">
          <tr className={lastCellPadding}>
            <th scope="col" className="px-5 py-3 sm:px-6">
              Device
            </th>
            <th scope="col" className="px-3 py-3">
              Status
            </th>
            <th scope="col" className="px-3 py-3">
              Models
            </th>
            <th scope="col" className="px-3 py-3 text-right">
              Requests
            </th>
            {showReputation && (
              <th scope="col" className="px-3 py-3 text-right">
                Reputation
              </th>
            )}
            {showActive && (
              <th scope="col" className="px-3 py-3">
                Active
              </th>
            )}
            {showActions && (
              <th scope="col" className="px-5 py-3 text-right sm:px-6">
                Actions
              </th>
            )}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-100 dark:divide-slate-800">
          {nodes.map((node) => (
            <tr
              key={node.id}
              title={lastSeenTip(node.last_seen)}
              className={cn(lastCellPadding, 'hover:bg-slate-50/70 dark:hover:bg-slate-800/40')}
            >
              <td className="px-5 py-3 font-medium whitespace-nowrap text-slate-900 sm:px-6 dark:text-white">
                {deviceLabel(node)}
              </td>
              <td className="px-3 py-3 whitespace-nowrap">
                <NodeStatusBadge status={node.status} plain={!showStatusBadge} />
              </td>
              <td className="px-3 py-3">
                {node.servingModels.length === 0 ? (
                  <span className="text-slate-500 dark:text-slate-400">None</span>
                ) : (
                  <div className="flex flex-wrap gap-1">
                    {node.servingModels.map((name) => (
                      <span
                        key={name}
                        className="rounded-md bg-brand-50 px-2 py-0.5 text-xs font-medium whitespace-nowrap text-brand-700 dark:bg-brand-500/15 dark:text-brand-100"
                      >
                        {name}
                      </span>
                    ))}
                  </div>
                )}
              </td>
              <td className="px-3 py-3 text-right text-slate-700 tabular-nums dark:text-slate-300">
                {formatNumber(node.total_requests)}
              </td>
              {showReputation && (
                <td className="px-3 py-3 text-right text-slate-700 tabular-nums dark:text-slate-300">
                  {formatReputation(node.reputation_score)}
                </td>
              )}
              {showActive && (
                <td className="px-3 py-3">
                  <span
                    className={cn(
                      'text-xs font-medium',
                      node.is_active
                        ? 'text-emerald-700 dark:text-emerald-300'
                        : 'text-slate-500 dark:text-slate-400',
                    )}
                  >
                    {node.is_active ? 'Active' : 'Inactive'}
                  </span>
                </td>
              )}
              {showActions && (
                <td className="px-5 py-2 text-right whitespace-nowrap sm:px-6">
                  <Button
                    variant="ghost"
                    size="icon"
                    aria-label={`Edit ${deviceLabel(node)}`}
                    onClick={() => onEdit?.(node)}
                  >
                    <Pencil className="h-4 w-4" aria-hidden />
                  </Button>
                  <Button
                    variant="ghost"
                    size="icon"
                    aria-label={`Delete ${deviceLabel(node)}`}
                    className="hover:text-red-600 dark:hover:text-red-400"
                    onClick={() => onDelete?.(node)}
                  >
                    <Trash2 className="h-4 w-4" aria-hidden />
                  </Button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
