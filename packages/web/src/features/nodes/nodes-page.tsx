import { Plus, Server } from 'lucide-react'
import { useState } from 'react'
import { Link } from 'react-router'
import { Card } from '../../components/card.tsx'
import { useFeedback } from '../../components/feedback/feedback-context.tsx'
import { NodeTable } from '../../components/node-table.tsx'
import { PageContainer, PageHeader } from '../../components/page-header.tsx'
import { Spinner } from '../../components/spinner.tsx'
import { errorMessage } from '../../lib/api-error.ts'
import { deviceLabel, nodeStats, type NodeRecord } from '../../lib/node-records.ts'
import { EditNodeDialog } from './components/edit-node-dialog.tsx'
import { NodeStats } from './components/node-stats.tsx'
import { useDeleteNode, useMyNodes } from './nodes-api.ts'

const addNodeClass =
  'focus-ring inline-flex h-10 items-center gap-2 rounded-lg bg-brand-600 px-4 text-sm font-medium text-white shadow-sm hover:bg-brand-700'

/** My Nodes (spec §2): stat cards, the user's node table, edit and delete. */
export default function NodesPage() {
  const [editing, setEditing] = useState<NodeRecord | null>(null)
  const nodes = useMyNodes(editing !== null)
  const deleteNode = useDeleteNode()
  const list = nodes.data ?? []

  const { confirm, toast } = useFeedback()

  const onDelete = async (node: NodeRecord) => {
    const ok = await confirm(
      `Are you sure you want to delete "${deviceLabel(node)}"? This action cannot be undone.`,
      { title: 'Delete node', confirmLabel: 'Delete', destructive: true },
    )
    if (!ok) return
    deleteNode.mutate(node.id, {
      onError: (err) =>
        toast(`Failed to delete node: ${errorMessage(err, 'Unknown error')}`, 'error'),
    })
  }

  return (
    <PageContainer>
      <PageHeader
        title="My Nodes"
        subtitle="View and manage your compute nodes"
        actions={
          <Link to="/nodes/setup" className={addNodeClass}>
            <Plus className="h-4 w-4" aria-hidden />
            Add Node
          </Link>
        }
      />
      <NodeStats stats={nodeStats(list)} />
      <Card className="overflow-hidden">
        {nodes.isLoading ? (
          <Spinner label="Loading your nodes..." />
        ) : list.length === 0 ? (
          <div className="px-6 py-14 text-center">
            <Server
              className="mx-auto mb-3 h-9 w-9 text-slate-300 dark:text-slate-600"
              aria-hidden
            />
            <p className="font-medium text-slate-800 dark:text-slate-200">No nodes yet</p>
            <p className="mt-1 text-sm text-slate-500 dark:text-slate-400">
              Get started by setting up your first node
            </p>
            <Link to="/nodes/setup" className={`${addNodeClass} mt-5`}>
              <Plus className="h-4 w-4" aria-hidden />
              Add Node
            </Link>
          </div>
        ) : (
          <NodeTable
            nodes={list}
            showReputation
            showVerification
            showActive
            showActions
            onEdit={setEditing}
            onDelete={(n) => void onDelete(n)}
          />
        )}
      </Card>
      {editing && (
        <EditNodeDialog key={editing.id} node={editing} onClose={() => setEditing(null)} />
      )}
    </PageContainer>
  )
}
