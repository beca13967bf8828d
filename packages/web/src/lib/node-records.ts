/**
 * @module Node records as the screens use them (spec §3, §4), shared by My Nodes and Network.
 */

/** A `nodes` record, with servingModels derived from its serving node_models. */
export interface NodeRecord {
  id: string
  user: string
  device_name: string
  status: string
  total_requests: number
  reputation_score: number
  is_active: boolean
  last_seen: string
  servingModels: string[]
  /** What the node reported in its hello (absent until it first connects). */
  hardware?: NodeHardwareInfo | null
  /** Canary verification (docs/verification.md): probation, verified or trusted. */
  verification?: string
  /** Credits earned on probation, held until the node is verified (its owner sees them). */
  pending_earnings?: number
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

/** The `hardware` a node reports: memory in bytes; VRAM where its GPU backend tells. */
export interface NodeHardwareInfo {
  cpu_model?: string
  cpu_cores?: number
  memory_bytes?: number
  gpu?: string | null
  vram_bytes?: number | null
}

/** A `models` catalogue record. */
export interface CatalogueModel {
  id: string
  name: string
  display_name?: string
  description?: string
  file_size_bytes?: number
  is_active?: boolean
  sort_order?: number
}

/** A `node_models` record with its model expanded. */
export interface NodeModelRecord {
  id: string
  node: string
  model: string
  requested_download: boolean
  requested_serving: boolean
  is_downloaded: boolean
  is_serving: boolean
  tokens_per_second: number
  download_progress: string
  error_message: string
  /** When the owner last pressed Retry (the node then tries again at once). */
  retry_requested_at?: string
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
