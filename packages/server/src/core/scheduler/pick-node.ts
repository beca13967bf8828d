/**
 * @module Node choice for one request, on facts the coordinator holds rather than a node's claims:
 * among connected nodes that are active, serving the model, not benched and not owned by anyone
 * whose node already tried this request, those with a free slot; best reputation first, then the
 * speed the coordinator measured on their real jobs, then the least loaded. Nodes on probation get
 * a small share of the traffic: they are chosen first only with probability `probationShare`
 * (or when no verified node is free).
 */
import type { NodeHandle, NodeRegistry } from '../nodes/node-registry.ts'
import type { Work } from './work.ts'

export interface NodeChoice {
  /** The best node with a free slot, or null. */
  node: NodeHandle | null
  /** Its owner (attempts for one request go to different owners). */
  owner: string
  /** Its speed as the coordinator measured it (0: not measured yet). */
  speed: number
  /** Whether any eligible node exists at all (busy ones included); if not, waiting is useless. */
  anyEligible: boolean
  /** Whether a node that could run it is stored as online but has no socket on any process now
   * (between connections: its process drained or died, and it may be back in a moment). */
  anyAway: boolean
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

interface Candidate {
  row: CandidateRow
  session: NodeHandle
}

/** A node serving the model, as stored (whether it is connected and free is the registry's). */
export interface CandidateRow {
  id: string
  owner: string
  reputation: number
  speed: number
  probation: boolean
  /** Its stored status is online or busy (a process holds, or held until it died, its socket). */
  storedOnline: boolean
}

/** The best connected node with a free slot among `rows`, by the live sessions in `registry`.
 * One pass, no copies: it runs for every waiting request over every node serving its model. */
export function chooseNode(
  rows: CandidateRow[],
  registry: NodeRegistry,
  options: PickOptions,
): NodeChoice {
  let anyEligible = false
  let anyAway = false
  let established: Candidate | null = null
  let onProbation: Candidate | null = null
  for (const row of rows) {
    if (options.excludeNodes.has(row.id) || options.excludeOwners.has(row.owner)) continue
    const session = registry.get(row.id)
    if (!session?.open || !session.helloed) {
      anyAway ||= row.storedOnline
      continue
    }
    anyEligible = true
    if (session.freeSlots <= 0) continue
    const candidate = { row, session }
    if (row.probation) {
      if (!onProbation || better(candidate, onProbation)) onProbation = candidate
    } else if (!established || better(candidate, established)) established = candidate
  }
  const preferProbation = onProbation !== null && options.random() < options.probationShare
  const choice = (preferProbation ? onProbation : established) ?? onProbation
  return {
    node: choice?.session ?? null,
    owner: choice?.row.owner ?? '',
    speed: choice?.row.speed ?? 0,
    anyEligible,
    anyAway,
  }
}

/** A canary goes to its node (`nodeId`) only, while it waits for it (`waitMs` from its
 * queueing), and is offered once. */
export function canaryChoice(
  nodeId: string,
  work: Pick<Work, 'queuedAt' | 'offers'>,
  registry: NodeRegistry,
  waitMs: number,
): NodeChoice {
  const session = registry.get(nodeId)
  const waiting = Date.now() - work.queuedAt < waitMs
  const up = Boolean(session?.open && session.helloed) && work.offers === 0 && waiting
  const free = up && session!.freeSlots > 0
  return { node: free ? session! : null, owner: '', speed: 0, anyEligible: up, anyAway: false }
}

/** Best reputation first, then the measured speed, then the least loaded; the first seen on a tie. */
function better(a: Candidate, b: Candidate): boolean {
  return (
    (a.row.reputation - b.row.reputation ||
      a.row.speed - b.row.speed ||
      b.session.jobs.size - a.session.jobs.size) > 0
  )
}
