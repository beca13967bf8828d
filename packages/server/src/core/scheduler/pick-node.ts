/**
 * @module Node choice for one request, on facts the coordinator holds rather than a node's claims:
 * among connected nodes that are active, serving the model, not benched and not owned by anyone
 * whose node already tried this request, those with a free slot; best reputation first, then the
 * speed the coordinator measured on their real jobs, then the least loaded. Nodes on probation get
 * a small share of the traffic: they are chosen first only with probability `probationShare`
 * (or when no verified node is free).
 */
import type { NodeHandle, NodeRegistry } from '../nodes/node-registry.ts'

export interface NodeChoice {
  /** The best node with a free slot, or null. */
  node: NodeHandle | null
  /** Its owner (attempts for one request go to different owners). */
  owner: string
  /** Its speed as the coordinator measured it (0: not measured yet). */
  speed: number
  /** Whether any eligible node exists at all (busy ones included); if not, waiting is useless. */
  anyEligible: boolean
}

export interface PickOptions {
  /** Nodes that already tried the request. */
  excludeNodes: Set<string>
  /** Owners whose node already failed the request. */
  excludeOwners: Set<string>
  /** Chance that a free probation node is preferred over verified ones. */
  probationShare: number
  random: () => number
}

interface Candidate extends CandidateRow {
  session: NodeHandle
}

/** A node serving the model, as stored (whether it is connected and free is the registry's). */
export interface CandidateRow {
  id: string
  owner: string
  reputation: number
  speed: number
  probation: boolean
}

/** The best connected node with a free slot among `rows`, by the live sessions in `registry`. */
export function chooseNode(
  rows: CandidateRow[],
  registry: NodeRegistry,
  options: PickOptions,
): NodeChoice {
  const eligible = rows
    .map((r) => ({ ...r, session: registry.get(r.id) }))
    .filter(
      (c): c is Candidate =>
        Boolean(c.session?.open && c.session.helloed) &&
        !options.excludeNodes.has(c.session!.nodeId) &&
        !options.excludeOwners.has(c.owner),
    )
  const free = eligible.filter((c) => c.session.freeSlots > 0)
  free.sort(
    (a, b) =>
      b.reputation - a.reputation || b.speed - a.speed || a.session.jobs.size - b.session.jobs.size,
  )
  const established = free.filter((c) => !c.probation)
  const onProbation = free.filter((c) => c.probation)
  const preferProbation = onProbation.length > 0 && options.random() < options.probationShare
  const choice = (preferProbation ? onProbation[0] : established[0]) ?? free[0]
  return {
    node: choice?.session ?? null,
    owner: choice?.owner ?? '',
    speed: choice?.speed ?? 0,
    anyEligible: eligible.length > 0,
  }
}
