import { Pencil, Server, Trash2 } from 'lucide-react'
import { cn } from '../lib/cn.ts'
import { formatNumber, formatReputation, parseRecordDate } from '../lib/format.ts'
import { deviceLabel, isNodeOnline, type NodeRecord } from '../lib/node-records.ts'
import { Button } from './button.tsx'
import { NodeStatusBadge } from './node-status-badge.tsx'
import { VerificationBadge } from './verification-badge.tsx'

export interface NodeTableProps {
  nodes: NodeRecord[]
  showReputation?: boolean
  showActive?: boolean
  /** Verification state and pending earnings (the owner's view, My Nodes). */
  showVerification?: boolean
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
  showVerification = false,
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
    <div className="sm:overflow-x-auto">
      <table className="w-full text-left text-sm sm:min-w-[40rem]">
        <thead className="bg-slate-50 text-xs font-medium tracking-wide text-slate-500 uppercase max-sm:sr-only dark:bg-slate-950/40 dark:text-slate-400">
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
            {showVerification && (
              <th scope="col" className="px-3 py-3">
                Verification
              </th>
            )}
            {showVerification && (
              <th scope="col" className="px-3 py-3 text-right">
                Pending
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
        <tbody className="divide-y divide-slate-100 max-sm:block dark:divide-slate-800">
          {nodes.map((node) => (
            <tr
              key={node.id}
              title={lastSeenTip(node.last_seen)}
              className={cn(
                lastCellPadding,
                phoneRow,
                'hover:bg-slate-50/70 dark:hover:bg-slate-800/40',
              )}
            >
              <td className="px-5 py-3 font-medium whitespace-nowrap text-slate-900 max-sm:col-start-1 max-sm:row-start-1 max-sm:truncate max-sm:p-0 sm:px-6 dark:text-white">
                {deviceLabel(node)}
              </td>
              <td className={cn('px-3 py-3 whitespace-nowrap', phoneCell)}>
                <PhoneLabel>Status</PhoneLabel>
                <NodeStatusBadge status={node.status} plain={!showStatusBadge} />
              </td>
              <td className={cn('px-3 py-3', phoneCell)}>
                <PhoneLabel>Models</PhoneLabel>
                {node.servingModels.length === 0 ? (
                  <span className="text-slate-500 dark:text-slate-400">None</span>
                ) : (
                  <div className="flex flex-wrap gap-1">
                    {node.servingModels.map((name) =>
                      isNodeOnline(node.status) ? (
                        <span
                          key={name}
                          className="rounded-md bg-brand-50 px-2 py-0.5 text-xs font-medium whitespace-nowrap text-brand-700 dark:bg-brand-500/15 dark:text-brand-100"
                        >
                          {name}
                        </span>
                      ) : (
                        // What an offline node last served: it serves nothing until it is back.
                        <span
                          key={name}
                          className="rounded-md bg-slate-100 px-2 py-0.5 text-xs whitespace-nowrap text-slate-600 dark:bg-slate-800 dark:text-slate-300"
                        >
                          {name} · offline
                        </span>
                      ),
                    )}
                  </div>
                )}
              </td>
              <td
                className={cn(
                  'px-3 py-3 text-right text-slate-700 tabular-nums dark:text-slate-300',
                  phoneCell,
                )}
              >
                <PhoneLabel>Requests</PhoneLabel>
                <span>{formatNumber(node.total_requests)}</span>
              </td>
              {showReputation && (
                <td
                  className={cn(
                    'px-3 py-3 text-right text-slate-700 tabular-nums dark:text-slate-300',
                    phoneCell,
                  )}
                >
                  <PhoneLabel>Reputation</PhoneLabel>
                  <span>{formatReputation(node.reputation_score)}</span>
                </td>
              )}
              {showVerification && (
                <td className={cn('px-3 py-3 whitespace-nowrap', phoneCell)}>
                  <PhoneLabel>Verification</PhoneLabel>
                  <VerificationBadge verification={node.verification} />
                </td>
              )}
              {showVerification && (
                <td
                  className={cn(
                    'px-3 py-3 text-right text-slate-700 tabular-nums dark:text-slate-300',
                    phoneCell,
                  )}
                >
                  <PhoneLabel>Pending</PhoneLabel>
                  <span title="Credits earned on probation, paid once the node is verified">
                    {formatNumber(node.pending_earnings ?? 0, 2)}
                  </span>
                </td>
              )}
              {showActive && (
                <td className={cn('px-3 py-3', phoneCell)}>
                  <PhoneLabel>Active</PhoneLabel>
                  <span
                    className={cn(
                      'text-xs font-medium',
                      node.is_active && isNodeOnline(node.status)
                        ? 'text-emerald-700 dark:text-emerald-300'
                        : 'text-slate-500 dark:text-slate-400',
                    )}
                  >
                    {node.is_active ? 'Active' : 'Inactive'}
                    {node.is_active && !isNodeOnline(node.status) ? ' · offline' : ''}
                  </span>
                </td>
              )}
              {showActions && (
                <td className="px-5 py-2 text-right whitespace-nowrap max-sm:col-start-2 max-sm:row-start-1 max-sm:p-0 sm:px-6">
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

/**
 * Below 640 px each row is a small card: the device name with the actions beside it on the first
 * line, then one labelled line per column, so Edit and Delete are never off-screen.
 */
const phoneRow =
  'max-sm:grid max-sm:grid-cols-[minmax(0,1fr)_auto] max-sm:items-center max-sm:gap-x-2 max-sm:gap-y-1 max-sm:px-4 max-sm:py-3'
const phoneCell =
  'max-sm:col-span-2 max-sm:flex max-sm:items-center max-sm:gap-2 max-sm:p-0 max-sm:text-left'

/** A cell's column name, shown only in the phone layout (the header row is hidden there). */
function PhoneLabel({ children }: { children: string }) {
  return (
    <span
      className="w-24 shrink-0 text-xs text-slate-500 sm:hidden dark:text-slate-400"
      aria-hidden
    >
      {children}
    </span>
  )
}
