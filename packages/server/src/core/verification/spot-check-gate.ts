/**
 * @module Which settled answers a spot check may start on (spot-checks.ts): a random draw against
 * the higher of the two rates (the node's state, read later, decides between them), at most one
 * check per node at a time, a minimum gap between two of a node's checks and a cap on checks at
 * once, so a busy node can never flood its reference. The clock and the draws are injected.
 */

export interface GateOptions {
  probationRate: number
  verifiedRate: number
  minGapMs: number
  maxInFlight: number
  random: () => number
}

export class SpotCheckGate {
  private busy = new Set<string>()
  private lastStart = new Map<string, number>()

  constructor(
    private options: GateOptions,
    private now: () => number = Date.now,
  ) {}

  /** The draw for a check of `nodeId` now (below the node's rate: checked), or null: none. */
  admit(nodeId: string): number | null {
    const { probationRate, verifiedRate, minGapMs, maxInFlight } = this.options
    const draw = this.options.random()
    if (draw >= Math.max(probationRate, verifiedRate)) return null
    if (this.busy.has(nodeId) || this.busy.size >= maxInFlight) return null
    if (this.now() - (this.lastStart.get(nodeId) ?? -Infinity) < minGapMs) return null
    this.busy.add(nodeId)
    return draw
  }

  /** The node's rate applies to `draw` (it was read after admit): whether to score now. */
  drawn(nodeId: string, draw: number, verification: string): boolean {
    const rate =
      verification === 'probation' ? this.options.probationRate : this.options.verifiedRate
    if (draw >= rate) return false
    // The gap runs from checks that go to a reference, not from draws that came to nothing.
    this.lastStart.set(nodeId, this.now())
    return true
  }

  /** The check admitted for `nodeId` is over. */
  release(nodeId: string): void {
    this.busy.delete(nodeId)
    // Starts older than the gap no longer matter: the map stays the size of the recent nodes.
    if (this.lastStart.size < 1000) return
    const before = this.now() - this.options.minGapMs
    for (const [node, at] of this.lastStart) if (at < before) this.lastStart.delete(node)
  }
}
