/**
 * @module Node records as the screens use them (spec §3, §4), shared by My Nodes and Network.
 * The records themselves are declared in `@meshwork/protocol/records`.
 */
import type * as Records from '@meshwork/protocol/records'

export type { NodeHardwareInfo } from '@meshwork/protocol/records'

/** A `nodes` record, with servingModels derived from its serving node_models. */
export type NodeRecord = Pick<
  Records.NodeRecord,
  'id' | 'user' | 'device_name' | 'total_requests' | 'reputation_score' | 'is_active' | 'last_seen'
> &
  Partial<Pick<Records.NodeRecord, 'hardware' | 'pending_earnings'>> & {
    /** Kept a string: a status this client does not know shows grey. */
    status: string
    verification?: string
    servingModels: string[]
  }

export type VerificationTone = 'amber' | 'green' | 'blue'

/** How a node's verification state reads on My Nodes, with a tip that says what it means. */
export function verificationDisplay(verification: string | null | undefined): {
  label: string
  tone: VerificationTone
  tip: string
} {
  switch (verification) {
    case 'verified':
      return {
        label: 'Verified',
        tone: 'green',
        tip: 'Passed its checks: earnings are paid at once',
      }
    case 'trusted':
      return {
        label: 'Trusted',
        tone: 'blue',
        tip: 'A reference node the operator trusts',
      }
    default:
      return {
        label: 'Probation',
        tone: 'amber',
        tip: 'New or re-checked: gets a small share of requests; earnings are held until it passes its checks',
      }
  }
}

/** A `models` catalogue record. */
export type CatalogueModel = Pick<Records.ModelRecord, 'id' | 'name'> &
  Partial<
    Pick<
      Records.ModelRecord,
      | 'display_name'
      | 'description'
      | 'file_size_bytes'
      | 'approx_size_bytes'
      | 'is_active'
      | 'sort_order'
    >
  >

/** A `node_models` record with its model expanded. */
export type NodeModelRecord = Pick<
  Records.NodeModelRecord,
  'id' | 'node' | 'model' | 'is_downloaded' | 'is_serving'
> &
  Required<
    Pick<
      Records.NodeModelRecord,
      | 'requested_download'
      | 'requested_serving'
      | 'tokens_per_second'
      | 'download_progress'
      | 'error_message'
    >
  > &
  Partial<Pick<Records.NodeModelRecord, 'retry_requested_at'>> & {
    expand?: { model?: CatalogueModel }
  }

/** The name shown for a model: display_name, else name. */
export function modelLabel(
  model: Pick<CatalogueModel, 'name' | 'display_name'> | undefined,
): string {
  return model?.display_name || model?.name || 'Unknown model'
}

/** Device name with the spec's default 'Unknown'. */
export function deviceLabel(node: Pick<NodeRecord, 'device_name'>): string {
  return node.device_name || 'Unknown'
}

export type StatusTone = 'green' | 'blue' | 'red' | 'grey'

/**
 * Status badge colour (spec §4): online green, busy blue, offline red, anything else grey.
 * A missing status reads as offline.
 */
export function nodeStatusTone(status: string | null | undefined): StatusTone {
  switch (status || 'offline') {
    case 'online':
      return 'green'
    case 'busy':
      return 'blue'
    case 'offline':
      return 'red'
    default:
      return 'grey'
  }
}

/** The badge's label: the status itself, 'offline' when missing. */
export function nodeStatusLabel(status: string | null | undefined): string {
  return status || 'offline'
}

/** A node counts as Active only when it is online and is_active (spec §4). */
export function isNodeActive(node: Pick<NodeRecord, 'status' | 'is_active'>): boolean {
  return node.status === 'online' && node.is_active
}

export interface NodeStats {
  total: number
  online: number
  active: number
  totalRequests: number
}

/** The four stat cards of My Nodes. */
export function nodeStats(nodes: NodeRecord[]): NodeStats {
  return {
    total: nodes.length,
    online: nodes.filter((n) => n.status === 'online').length,
    active: nodes.filter(isNodeActive).length,
    totalRequests: nodes.reduce((sum, n) => sum + (n.total_requests ?? 0), 0),
  }
}

/** A node that is not connected serves nothing, whatever its models last reported. */
export function isNodeOnline(status: string | null | undefined): boolean {
  return status === 'online' || status === 'busy'
}
